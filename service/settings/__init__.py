"""goldwatch configuration: read once, validated, frozen, passed down.

Sources, highest priority first: keyword overrides (CLI flags), ``GOLDWATCH_*`` environment
variables (nested with ``__``, e.g. ``GOLDWATCH_EVAL__K='[1,10]'``), the YAML file, defaults.
Only :func:`load_settings` builds a :class:`Settings`; everything else receives it.

A bad value fails at start with :class:`ConfigError`, naming the field path and the problem;
a misspelt setting (YAML key or ``GOLDWATCH_`` variable) gets the nearest valid name
(``difflib``): ``analytics.langauge`` -> "did you mean analytics.language?".

Relative paths written in the YAML file resolve against the file's folder, so a
configuration works from any working directory; paths from ``GOLDWATCH_*`` variables, CLI
flags and the defaults stay relative to the current directory.

The package, one concept a module:

* :mod:`~service.settings.sections`: the section models and :class:`Settings`, the whole;
* :mod:`~service.settings.kafka`: the ``kafka`` section (a leaf: the Kafka adapters read it);
* :mod:`~service.settings.loader`: :func:`load_settings` (YAML file, environment, overrides,
  layered), the error messages, the effective configuration with secrets masked;
* :mod:`~service.settings.secrets`: secret files, token and key rules, masking.
* :mod:`~service.settings.checks`: the start-up checks of the files, secrets and state a
  valid configuration names (``config check``, ``serve``); imported from there.

This module re-exports the names the rest of goldwatch imports (``from service.settings
import Settings, load_settings``).
"""

from __future__ import annotations

from service.settings.kafka import KafkaSourceConfig
from service.settings.loader import (
    ENV_DELIMITER,
    ENV_PREFIX,
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_NODES,
    ConfigError,
    deeply_nested_environment_values,
    effective_config,
    json_depth,
    layered_values,
    load_settings,
    load_yaml_bounded,
    read_config_file,
    resolve_relative_paths,
    unknown_environment_settings,
)
from service.settings.secrets import (
    PII_KEY_MIN_CHARS,
    SECRET_WORDS,
    mask_url,
    pii_key_problem,
    read_secret_file,
    token_problem,
)
from service.settings.sections import (
    BUILTIN_HYBRIDS,
    BUILTIN_RETRIEVERS,
    GOLD_SET_OFF,
    HYBRID_MEMBERS,
    AnalyticsConfig,
    ApiConfig,
    DriftSettings,
    EvalConfig,
    RetrieverConfig,
    RetrieverKind,
    Settings,
    ShadowSettings,
    SourceConfig,
    StateConfig,
    TracesConfig,
    gold_set_notice,
)

__all__ = [
    "BUILTIN_HYBRIDS",
    "BUILTIN_RETRIEVERS",
    "ENV_DELIMITER",
    "ENV_PREFIX",
    "GOLD_SET_OFF",
    "HYBRID_MEMBERS",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "PII_KEY_MIN_CHARS",
    "SECRET_WORDS",
    "AnalyticsConfig",
    "ApiConfig",
    "ConfigError",
    "DriftSettings",
    "EvalConfig",
    "KafkaSourceConfig",
    "RetrieverConfig",
    "RetrieverKind",
    "Settings",
    "ShadowSettings",
    "SourceConfig",
    "StateConfig",
    "TracesConfig",
    "deeply_nested_environment_values",
    "effective_config",
    "gold_set_notice",
    "json_depth",
    "layered_values",
    "load_settings",
    "load_yaml_bounded",
    "mask_url",
    "pii_key_problem",
    "read_config_file",
    "read_secret_file",
    "resolve_relative_paths",
    "token_problem",
    "unknown_environment_settings",
]
