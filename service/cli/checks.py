"""The start-up file checks of ``goldwatch config check`` and ``goldwatch serve``: every file
the settings name can be used (gold set, corpus, topic model, secrets and TLS files, the
source file, the state file and the dead-letter file), found without creating anything.
Each problem is one ``"<field>: <problem>"`` naming the file, never its content.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from service.cli.common import _describe
from service.files.regular import open_regular

if TYPE_CHECKING:
    from service.settings import Settings


def _path_origin(field: str, config: Path | None) -> str:
    """Where the path setting ``field`` (``"gold_set"``, ``"source.path"``) came from and
    what a relative value there is relative to: its ``GOLDWATCH_*`` variable (the working
    folder), else the YAML file (that file's folder), else a default (the working folder).
    """
    from service.settings import ENV_DELIMITER, ENV_PREFIX

    variable = ENV_PREFIX + field.upper().replace(".", ENV_DELIMITER)
    if variable in os.environ:
        return f"{variable}, relative to the working folder"
    if config is not None:
        return f"from {config}, relative to that file's folder"
    return "default, relative to the working folder"


#: Kafka settings naming a file the client reads at start (passwords, certificates).
KAFKA_FILES = ("sasl_password_file", "ssl_password_file", "ssl_cafile", "ssl_certfile",
               "ssl_keyfile", "ssl_crlfile")  # fmt: skip


def _file_problems(settings: Settings, loaded: dict[str, object] | None = None,
                   config: Path | None = None) -> list[str]:  # fmt: skip
    """One ``"<field>: <problem>"`` per unusable file the settings name (see ``config
    check``); the gold set and corpus are loaded with the loaders serve and replay use (and
    kept in ``loaded`` by setting name, when given). A missing file is named by its absolute
    path and where the setting came from (``config``: the YAML file, if any): "gold_set: file
    not found: /srv/gold.jsonl (GOLDWATCH_GOLD_SET, relative to the working folder)"."""
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
            where = _path_origin(name, config)
            problems.append(f"{name}: file not found: {Path(path).absolute()} ({where})")
            continue
        try:
            if loader is not None:
                result = loader(path)
                if loaded is not None:
                    loaded[name] = result
        except (ValueError, OSError) as exc:
            problems.append(f"{name}: {_describe(exc)}")
    problems += _secret_problems(settings)
    if settings.source.kind == "file" and not Path(str(settings.source.path)).is_file():
        where = _path_origin("source.path", config)
        missing = Path(str(settings.source.path)).absolute()
        problems.append(f"source.path: file not found: {missing} ({where})")
    return problems + _state_problems(settings) + _dead_letter_problems(settings)


def _dead_letter_problems(settings: Settings) -> list[str]:
    """``source.dlq_path`` (or HTTP ingest's default dead-letter file beside the state file)
    exists but is not a regular file (a FIFO, device, socket or folder): every dead letter
    written there would fail, so serve refuses it at start as it refuses the other files."""
    configured = settings.source.dlq_path
    path = Path(configured or Path(settings.state.path).parent / "goldwatch.dlq.jsonl")
    if not path.exists() or path.is_file():
        return []
    field = "source.dlq_path" if configured else "dead-letter file (beside state.path)"
    return [f"{field}: {path}: not a regular file (a FIFO, device, socket or folder)"]


def _secret_problems(settings: Settings) -> list[str]:
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


def _state_problems(settings: Settings) -> list[str]:
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
