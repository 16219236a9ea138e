"""Loading the configuration: the YAML file (read and parsed once, bounded), the
``GOLDWATCH_*`` environment and keyword overrides, layered, validated into a frozen
:class:`~service.settings.sections.Settings` by :func:`load_settings`; the messages of a bad
configuration (field paths, nearest valid names), and the effective configuration with its
secrets masked (``config check``).
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_settings import EnvSettingsSource, InitSettingsSource, SettingsError

from service.errors import GoldwatchError
from service.files.regular import read_regular
from service.settings.secrets import is_secret_name, mask_url
from service.settings.sections import Settings, has_path


class ConfigError(GoldwatchError, ValueError):
    """Raised when the configuration file or environment holds an invalid value.

    The message names the file (when there is one), each offending field path and the problem;
    it never includes the offending value (it may be a secret).
    """


#: Largest configuration file read (bytes); real ones are a few KiB.
MAX_CONFIG_BYTES = 1 << 20
#: Most values (mappings, lists, scalars) a configuration may expand to, aliases counted each
#: time they are used: a "billion laughs" file of 477 bytes expands to billions.
MAX_CONFIG_NODES = 100_000
#: Deepest nesting of mappings and lists in a configuration.
MAX_CONFIG_DEPTH = 64


def load_yaml_bounded(text: str, source: str) -> Any:
    """Parse one YAML document with bounds checked *before* any Python object is built:
    at most :data:`MAX_CONFIG_BYTES` of text, :data:`MAX_CONFIG_DEPTH` levels of nesting and
    :data:`MAX_CONFIG_NODES` values with aliases expanded (PyYAML's ``safe_load`` builds an
    alias bomb — or a cycle — as shared objects that explode when read, and recurses once
    per nesting level).

    The node graph from ``compose`` is small even for a bomb (aliases point at one node);
    walking it with a counter stops at the first bound.

    Args:
        text: the YAML text.
        source: the file, for messages.

    Returns:
        What ``yaml.safe_load`` returns (``None`` for an empty document).

    Raises:
        ConfigError: a bound is exceeded (the message names the file and the bound).
        yaml.YAMLError: not valid YAML.
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: larger than {MAX_CONFIG_BYTES} bytes")
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise ConfigError(f"{source}: nested more than {MAX_CONFIG_DEPTH} levels") from None
        if node is None:
            return None
        _check_yaml_bounds(node, source, loader)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_yaml_bounds(root: yaml.Node, source: str, loader: yaml.SafeLoader) -> None:
    """The bounds of :func:`load_yaml_bounded`, and no key given twice in one mapping:
    PyYAML keeps the last silently, so ``source: {kind: kafka}`` followed further down by
    ``source: {kind: none}`` ran with no source and ``config check`` passed (a trial).

    Keys are compared as ``loader`` builds them (``yes`` and ``on`` are both ``True``,
    ``1`` and ``0x1`` both ``1``: one key of the mapping PyYAML returns, a review), so a
    repeat is exactly a key PyYAML would drop.

    Raises:
        ConfigError: naming the file, the bound, or the repeated key's path and lines (key
            names only, never a value).
    """
    stack: list[tuple[yaml.Node, int, str]] = [(root, 0, "")]
    count = 0
    while stack:
        node, depth, path = stack.pop()
        count += 1
        if count > MAX_CONFIG_NODES:
            raise ConfigError(f"{source}: expands to more than {MAX_CONFIG_NODES} values "
                              "(YAML aliases used over and over?)")  # fmt: skip
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{source}: nested more than {MAX_CONFIG_DEPTH} levels")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            seen: dict[Any, tuple[str, int]] = {}  # built key -> (its text, its line)
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                where = f"{path}.{name}" if path else str(name)
                if name is not None and key.tag != "tag:yaml.org,2002:merge":
                    line = key.start_mark.line + 1
                    try:
                        built = loader.construct_object(key)
                        hash(built)
                    except (yaml.YAMLError, TypeError):  # PyYAML refuses it itself later
                        built = (key.tag, name)
                    if built in seen:
                        first, at = seen[built]
                        also = "" if first == name else f" (as {first})"
                        raise ConfigError(
                            f"{source}: {where} is given twice{also} (lines {at} and {line}); "
                            "YAML keeps only the last: remove one"
                        )
                    seen[built] = (name, line)
                stack.extend(((key, depth + 1, where), (value, depth + 1, where)))


def _item_model(annotation: Any) -> type[BaseModel] | None:
    """The model of ``tuple[Model, ...]`` / ``list[Model]`` (e.g. ``retrievers``), else None."""
    if typing.get_origin(annotation) in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return _submodel(args[0]) if len(args) == 1 else None
    return None


def resolve_relative_paths(data: dict[str, Any], base: Path, model: type[BaseModel]) -> None:
    """Rewrite, in place, every relative path value of ``data`` (a YAML file's mapping for
    ``model``) as ``base / value``; absolute paths, non-strings and unknown keys are left to
    validation. Recurses into sections and lists of sections."""
    for key, value in data.items():
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None:
            continue
        if has_path(field.annotation):
            if isinstance(value, str) and value.strip() and not Path(value).is_absolute():
                data[key] = str(base / value)
            continue
        sub = _submodel(field.annotation)
        if sub is not None and isinstance(value, dict):
            resolve_relative_paths(value, base, sub)
            continue
        item = _item_model(field.annotation)
        if item is not None and isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict):
                    resolve_relative_paths(entry, base, item)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The settings model that holds the field at ``loc`` (its last part), or None."""
    model: type[BaseModel] | None = Settings
    for part in loc[:-1]:
        if model is None:
            return None
        if isinstance(part, int):  # an item of a list of sections
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        model = _submodel(field.annotation) or _item_model(field.annotation)
    return model


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """`` (did you mean <path>?)`` for an unknown key at ``loc``, or "" with no close name."""
    model = _model_at(loc)
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    if not close:
        return ""
    parent = ".".join(str(part) for part in loc[:-1])
    return f" (did you mean {parent + '.' if parent else ''}{close[0]}?)"


def _format_errors(error: ValidationError, origin: str) -> str:
    lines = [f"invalid configuration ({origin}; GOLDWATCH_* variables override it):"]
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "<root>"
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden" and item["loc"]:
            message = f"unknown setting{_did_you_mean(tuple(item['loc']))}"
        # a section's validator may name its field in full ("api.token_file: ...")
        lines.append(f"  {message}" if message.startswith(f"{loc}.") else f"  {loc}: {message}")
    return "\n".join(lines)


ENV_PREFIX = "GOLDWATCH_"
ENV_DELIMITER = "__"


def _section_prefixes() -> tuple[str, ...]:
    """``("api_", "source_", …)``: each section of :class:`Settings` and one underscore."""
    return tuple(
        f"{name}_" for name, field in Settings.model_fields.items() if _submodel(field.annotation)
    )


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``X``, ``X | None``), or ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _submodel(arg)
            if found is not None:
                return found
    return None


def _is_mapping(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_mapping(arg) for arg in typing.get_args(annotation))
    return origin in (dict, Mapping) or annotation is dict


#: ``GOLDWATCH_<section>_…`` without the delimiter is a misspelt setting, not a tool variable.
_SECTION_PREFIXES = _section_prefixes()


def unknown_environment_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of ``GOLDWATCH_*`` variables that look like settings but name none.

    A variable is a setting when it is ``GOLDWATCH_<field>`` for a top-level field, or
    ``GOLDWATCH_<a>__<b>…`` (the nested delimiter): every part must then name a field of the
    section before it, case-insensitively, as pydantic-settings reads them; below a mapping
    field (e.g. a retriever's ``params``) any key is allowed. Variables without the delimiter
    that name no top-level field (``GOLDWATCH_LOCKED``, test switches) are not settings and
    are not reported, except a section's name and a field joined by one underscore
    (``GOLDWATCH_API_TOKEN``, meant as ``GOLDWATCH_API__TOKEN``).

    Args:
        environ: the environment (default ``os.environ``).

    Returns:
        The offending variable names, sorted (never their values).

    >>> unknown_environment_settings({"GOLDWATCH_SOURCE__KIDN": "kafka",
    ...     "GOLDWATCH_SOURCE__KIND": "file", "GOLDWATCH_LOCKED": "1"})
    ['GOLDWATCH_SOURCE__KIDN']
    """
    unknown = []
    for name in os.environ if environ is None else environ:
        if not name.upper().startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split(ENV_DELIMITER)
        if len(parts) == 1:
            # a top-level field, or not a setting at all -- unless it is a section's field
            # joined by one underscore (GOLDWATCH_API_TOKEN for GOLDWATCH_API__TOKEN), which
            # pydantic-settings would ignore silently
            top = parts[0]
            if top not in Settings.model_fields and top.startswith(_SECTION_PREFIXES):
                unknown.append(name)
            continue
        model: type[BaseModel] | None = Settings
        for part in parts:
            field = model.model_fields.get(part) if model is not None else None
            if field is None:  # no such field, or a part below a plain value
                unknown.append(name)
                break
            if _is_mapping(field.annotation):
                break  # any key below a mapping
            model = _submodel(field.annotation)
    return sorted(unknown)


def load_settings(path: Path | str | None = None, **overrides: Any) -> Settings:
    """Read, validate and freeze the configuration.

    Args:
        path: YAML file, or ``None`` for defaults plus environment.
        **overrides: values that win over file and environment (CLI flags).

    Returns:
        A frozen :class:`Settings`.

    Raises:
        ConfigError: the file is missing, is not YAML, is not a mapping, a field is invalid,
            a ``GOLDWATCH_<a>__<b>`` variable names no setting, or a ``GOLDWATCH_*`` JSON
            value is nested deeper than :data:`MAX_CONFIG_DEPTH` levels.
    """
    origin = str(path) if path is not None else "environment and defaults"
    file_values = read_config_file(Path(path)) if path is not None else {}
    unknown = unknown_environment_settings()
    if unknown:
        raise ConfigError(
            "invalid configuration (environment): "
            + ", ".join(unknown)
            + (" names no setting" if len(unknown) == 1 else " name no setting")
            + _env_suggestions(unknown)
            + " (sections and fields are joined with '__', e.g. GOLDWATCH_SOURCE__KIND; "
            "see docs/configuration.md)"
        )
    too_deep = deeply_nested_environment_values()
    if too_deep:
        raise ConfigError(
            "invalid configuration (environment): "
            + ", ".join(too_deep)
            + f": JSON nested more than {MAX_CONFIG_DEPTH} levels"
        )
    try:
        return Settings(**layered_values(file_values, overrides))
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, origin)) from None
    except SettingsError as exc:
        # A GOLDWATCH_* variable that is not valid JSON for a list or mapping field.
        raise ConfigError(
            f"invalid configuration (environment): {exc}; list and mapping values in "
            "GOLDWATCH_* variables are JSON, e.g. GOLDWATCH_EVAL__K='[1, 5, 10]'"
        ) from None


def read_config_file(path: Path) -> dict[str, Any]:
    """The YAML configuration file's settings, read and parsed once, with its relative paths
    resolved against the file's folder (:func:`resolve_relative_paths`).

    Args:
        path: the YAML file.

    Returns:
        The file's top-level mapping (``{}`` for an empty file).

    Raises:
        ConfigError: the file is missing, not a regular file, unreadable, not UTF-8, not YAML,
            beyond the bounds of :func:`load_yaml_bounded`, or its top level is not a mapping.
    """
    if path.exists() and not path.is_file():
        raise ConfigError(f"cannot read config file {path}: not a regular file")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        text = read_regular(path).decode("utf-8")  # a FIFO: a plain error, no hang
        loaded = load_yaml_bounded(text, str(path))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{path}: not valid YAML{where} ({problem})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    resolve_relative_paths(loaded, path.resolve().parent, Settings)
    return loaded


def layered_values(file_values: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """One mapping of setting values from the three layers, highest priority first: keyword
    ``overrides`` (CLI flags), ``GOLDWATCH_*`` variables, the YAML file's ``file_values``.
    Sections merge key by key (a variable setting ``api.port`` keeps the file's
    ``api.host``); any other value, a list included, is replaced whole by a higher layer.
    Top-level names match case-insensitively, as pydantic-settings matches keyword values.

    Given to ``Settings(...)``, whose own sources (keywords over the environment) then
    yield exactly this mapping: the file reaches the model as an argument, not through
    module state, so loads of different files (threads included) cannot see each other's.

    Raises:
        pydantic_settings.SettingsError: a ``GOLDWATCH_*`` list or mapping value is not JSON.
    """
    layers = (
        InitSettingsSource(Settings, init_kwargs=dict(file_values))(),
        EnvSettingsSource(Settings)(),
        InitSettingsSource(Settings, init_kwargs=dict(overrides))(),
    )
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _deep_merge(merged, layer)
    return merged


def _deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``update``: mappings present in both merge recursively, anything
    else in ``update`` wins (pydantic-settings merges its sources the same way)."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(merged.get(key), dict) and isinstance(value, dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def json_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text`` read as JSON, brackets inside
    strings (with their ``\\`` escapes) not counted; 0 for a scalar. A linear scan that
    builds nothing, so it is safe on any input (``json.loads`` recurses once per level and
    raises ``RecursionError`` near 1,000).

    >>> json_depth('[[1, "]["], {"a": [2]}]')
    3
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def deeply_nested_environment_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of ``GOLDWATCH_*`` variables whose value is a JSON list or mapping (it starts
    with ``[`` or ``{``, as pydantic-settings decodes for list, mapping and section fields)
    nested deeper than :data:`MAX_CONFIG_DEPTH` levels, the bound of a configuration file;
    sorted, never their values. Checked before pydantic-settings decodes them.

    >>> deeply_nested_environment_values({"GOLDWATCH_EVAL__K": "[" * 65 + "]" * 65,
    ...     "GOLDWATCH_RETRIEVERS": '[{"name": "h"}]'})
    ['GOLDWATCH_EVAL__K']
    """
    env = os.environ if environ is None else environ
    return sorted(
        name for name, value in env.items()
        if name.upper().startswith(ENV_PREFIX) and value.lstrip()[:1] in ("[", "{")
        and json_depth(value) > MAX_CONFIG_DEPTH
    )  # fmt: skip


def _env_names(model: type[BaseModel], prefix: str) -> list[str]:
    """Every ``GOLDWATCH_…`` variable name of ``model``'s fields, sections expanded."""
    names = []
    for name, field in model.model_fields.items():
        full = f"{prefix}{name.upper()}"
        names.append(full)
        sub = _submodel(field.annotation)
        if sub is not None:
            names += _env_names(sub, full + ENV_DELIMITER)
    return names


def _env_suggestions(unknown: list[str]) -> str:
    """`` (did you mean GOLDWATCH_…?)`` naming the nearest setting of each misspelt variable
    (``difflib``, ratio >= 0.75; with several, ``A -> B`` pairs); "" when none is close."""
    valid = _env_names(Settings, ENV_PREFIX)
    pairs = []
    for name in unknown:
        close = difflib.get_close_matches(name.upper(), valid, n=1, cutoff=0.75)
        if close:
            pairs.append((name, close[0]))
    if not pairs:
        return ""
    if len(unknown) == 1:
        return f" (did you mean {pairs[0][1]}?)"
    return " (did you mean " + "; ".join(f"{a} -> {b}" for a, b in pairs) + "?)"


def effective_config(settings: Settings) -> dict[str, Any]:
    """Return the settings as plain JSON-able data, with secrets masked: header values,
    URL passwords and secret-looking query and ``params`` values, the API token, the
    pseudonym key and the Kafka SASL password."""
    data = settings.model_dump(mode="json")
    if data["api"].get("token"):
        data["api"]["token"] = "***"
    if data["analytics"].get("pii_key"):
        data["analytics"]["pii_key"] = "***"
    if data.get("kafka") and data["kafka"].get("sasl_password"):
        data["kafka"]["sasl_password"] = "***"
    for retriever in data.get("retrievers", []):
        retriever["headers"] = dict.fromkeys(retriever.get("headers", {}), "***")
        if retriever.get("url"):
            retriever["url"] = mask_url(retriever["url"])
        retriever["params"] = {
            k: "***" if is_secret_name(k) else v for k, v in retriever.get("params", {}).items()
        }
    return data
