"""The start-up checks of the files, secrets and state a valid configuration names, found
without creating anything: what ``goldwatch config check`` reports and what ``goldwatch
serve`` refuses to start with.

Each problem is one ``"<field>: <problem>"`` string naming the setting and the file, never
the file's content (secrets) nor a question's text.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import yaml

from service.files.regular import describe_os_error, open_regular, read_regular
from service.settings.loader import ENV_DELIMITER, ENV_PREFIX, load_yaml_bounded
from service.settings.sections import Settings

#: Kafka settings naming a file the client reads at start (passwords, certificates).
KAFKA_FILES = ("sasl_password_file", "ssl_password_file", "ssl_cafile", "ssl_certfile",
               "ssl_keyfile", "ssl_crlfile")  # fmt: skip


def path_origin(field: str, config: Path | None) -> str:
    """Where the path setting ``field`` (``"gold_set"``, ``"source.path"``) came from and,
    when its value there is relative, what it is relative to: its ``GOLDWATCH_*`` variable
    (the working folder), else the YAML file (that file's folder), else a default (the working
    folder). An absolute value is named by its origin alone ("from /etc/goldwatch.yaml")."""
    variable = ENV_PREFIX + field.upper().replace(".", ENV_DELIMITER)
    if variable in os.environ:
        if Path(os.environ[variable].strip()).is_absolute():
            return variable
        return f"{variable}, relative to the working folder"
    if config is not None:
        if _absolute_in_file(field, config):
            return f"from {config}"
        return f"from {config}, relative to that file's folder"
    return "default, relative to the working folder"


def _absolute_in_file(field: str, config: Path) -> bool:
    """Whether the YAML file ``config`` gives the dotted ``field`` an absolute path (the
    loaded settings hold relative values already resolved against the file's folder, so the
    file's own text is read again; a file that cannot be read again counts as relative)."""
    try:
        value: object = load_yaml_bounded(read_regular(config).decode("utf-8"), str(config))
    except (OSError, ValueError, yaml.YAMLError):
        return False
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return isinstance(value, str) and Path(value.strip()).is_absolute()


def file_problems(settings: Settings, loaded: dict[str, object] | None = None,
                  config: Path | None = None) -> list[str]:  # fmt: skip
    """One ``"<field>: <problem>"`` per unusable file the settings name (see ``config
    check``); the gold set and corpus are loaded with the loaders serve and replay use (and
    kept in ``loaded`` by setting name, when given). A missing file is named by its absolute
    path and where the setting came from (``config``: the YAML file, if any): "gold_set: file
    not found: /srv/gold.jsonl (GOLDWATCH_GOLD_SET, relative to the working folder)".
    Includes :func:`secret_problems`, :func:`state_problems` and
    :func:`dead_letter_problems`."""
    from service.data.corpus import load_corpus
    from service.data.goldset import load_gold_set

    problems = []
    files: list[tuple[str, Path | None, Callable[[Path], object] | None]] = [
        ("gold_set", settings.gold_set, load_gold_set),
        ("corpus", settings.corpus, load_corpus),
        ("analytics.topics_model", settings.analytics.topics_model, None),
    ]
    for name, path, loader in files:
        if path is None:
            continue
        if Path(path).exists() and not Path(path).is_file():
            problems.append(f"{name}: {path}: not a regular file (a FIFO, device or folder)")
            continue
        if not Path(path).is_file():
            where = path_origin(name, config)
            problems.append(f"{name}: file not found: {Path(path).absolute()} ({where})")
            continue
        try:
            if loader is not None:
                result = loader(path)
                if loaded is not None:
                    loaded[name] = result
        except (ValueError, OSError) as exc:
            reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
            problems.append(f"{name}: {reason}")
    problems += secret_problems(settings)
    if settings.source.kind == "file" and not Path(str(settings.source.path)).is_file():
        where = path_origin("source.path", config)
        missing = Path(str(settings.source.path)).absolute()
        problems.append(f"source.path: file not found: {missing} ({where})")
    return problems + state_problems(settings) + dead_letter_problems(settings)


def dead_letter_problems(settings: Settings) -> list[str]:
    """``source.dlq_path`` (or, unset, HTTP ingest's default dead-letter file beside the state
    file and a file source's, the state's own ``<state.path>.dlq.jsonl``) exists but is not a
    regular file (a FIFO, device, socket or folder): every dead letter written there would
    fail, so serve refuses it at start as it refuses the other files."""
    configured = settings.source.dlq_path
    if configured:
        paths = {"source.dlq_path": Path(configured)}
    else:
        paths = {"dead-letter file (beside state.path)":
                 Path(settings.state.path).parent / "goldwatch.dlq.jsonl"}  # fmt: skip
        if settings.source.kind == "file":
            paths["the file source's dead-letter file"] = settings.state.dead_letter_path()
    return [f"{field}: {path}: not a regular file (a FIFO, device, socket or folder)"
            for field, path in paths.items() if path.exists() and not path.is_file()]  # fmt: skip


def secret_problems(settings: Settings) -> list[str]:
    """One ``"<field>: <problem>"`` per secret file that cannot be used: the pseudonym key
    file (read and checked as the pipeline will), and with the Kafka source the secret and
    TLS files it names (opened). Messages name the file, never its content."""
    problems = []
    if settings.analytics.pii_key_file is not None:
        try:
            settings.analytics.pii_key_bytes()
        except ValueError as exc:
            problems.append(str(exc))
    if settings.source.kind == "kafka" and settings.kafka is not None:
        for field in KAFKA_FILES:
            path = getattr(settings.kafka, field)
            if path is None:
                continue
            try:
                with open_regular(path):  # a FIFO: a plain error, not a hang
                    pass
            except OSError as exc:
                problems.append(f"kafka.{field}: cannot read {path}: {exc.strerror or exc}")
    return problems


def state_problems(settings: Settings) -> list[str]:
    """``state.path`` problems serve would meet, found without creating anything: the path
    exists but is not a regular file (a folder), or its folder cannot be created because the
    nearest existing ancestor is not a folder. (Permissions and the file's content are
    checked when serve opens it.)"""
    path = Path(settings.state.path)
    if path.exists() or path.is_symlink():
        return [] if path.is_file() else [f"state.path: {path} is not a regular file"]
    folder = path.parent
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return [f"state.path: cannot create {folder}: {ancestor} is not a folder"]
    return []
