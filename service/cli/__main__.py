"""``python -m service.cli``: the ``goldwatch`` command, as the console script runs it."""

from service.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
