"""Configuration: YAML + GOLDWATCH_* env, validated, frozen, errors name the field."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from pydantic_settings import EnvSettingsSource

from service.settings import ConfigError, effective_config, load_settings, load_yaml_bounded


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "goldwatch.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file() -> None:
    settings = load_settings()
    assert settings.eval.k == (1, 5, 10, 20)
    assert settings.retriever("bm25").kind == "bm25"


def test_yaml_file_is_read_and_k_normalised(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "eval:\n  k: [10, 1, 5, 10]\nretrievers:\n"
        "  - {name: prod, kind: http, url: 'http://127.0.0.1:9/search'}\n",
    )
    settings = load_settings(path)
    assert settings.eval.k == (1, 5, 10)
    assert settings.retriever("prod").url == "http://127.0.0.1:9/search"


def test_env_overrides_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "eval:\n  k: [1, 5]\n")
    monkeypatch.setenv("GOLDWATCH_EVAL__K", "[3]")
    assert load_settings(path).eval.k == (3,)


def test_env_section_merges_with_the_file_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "api:\n  host: 10.0.0.1\n  port: 9000\n")
    monkeypatch.setenv("GOLDWATCH_API__PORT", "9100")
    settings = load_settings(path, api={"max_connections": 64})
    # the file's host, the variable's port, the keyword's max_connections: three layers
    assert (settings.api.host, settings.api.port, settings.api.max_connections) == (
        "10.0.0.1", 9100, 64)  # fmt: skip


def test_the_file_is_parsed_once_per_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "eval:\n  k: [1, 5]\ngold_set: gold.jsonl\n")
    parses: list[str] = []
    original = yaml.SafeLoader.__init__

    def counting(self: yaml.SafeLoader, stream: Any) -> None:
        parses.append(str(stream)[:20])
        original(self, stream)

    monkeypatch.setattr(yaml.SafeLoader, "__init__", counting)
    settings = load_settings(path)
    assert len(parses) == 1
    assert settings.gold_set == tmp_path / "gold.jsonl"


def test_loads_of_two_files_in_two_threads_do_not_mix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: the file's values reached ``Settings`` through a module-level slot that a
    load set before building the model and cleared after it, so a load in another thread
    between the two left the first one with the other file's values, or none. Load B is
    held just before it reads the environment (the point between the two) while load A
    runs to the end; B must still see its own file."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    file_a = _write(tmp_path / "a", "eval:\n  k: [1]\n")
    file_b = _write(tmp_path / "b", "eval:\n  k: [7]\ngold_set: gold-b.jsonl\n")
    held, resume = threading.Event(), threading.Event()
    original = EnvSettingsSource.__init__

    def hold_load_b(self: EnvSettingsSource, *args: Any, **kwargs: Any) -> None:
        if threading.current_thread().name == "load-b" and not held.is_set():
            held.set()
            resume.wait(timeout=60)
        original(self, *args, **kwargs)

    monkeypatch.setattr(EnvSettingsSource, "__init__", hold_load_b)
    loaded: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: loaded.update(b=load_settings(file_b)), name="load-b", daemon=True
    )
    thread.start()
    assert held.wait(timeout=60)
    loaded["a"] = load_settings(file_a)
    resume.set()
    thread.join(timeout=60)
    assert loaded["a"].eval.k == (1,)
    assert loaded["a"].gold_set is None
    assert loaded["b"].eval.k == (7,)
    assert loaded["b"].gold_set == tmp_path / "b" / "gold-b.jsonl"


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValidationError):
        settings.gold_set = Path("x")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("eval:\n  k: [0, 5]\n", "eval.k", ">= 1"),
        ("eval:\n  depth: 5\n  k: [10]\n", "eval", "depth"),
        # a fifth trial: a window shorter than its bucket read "no 1 s window reached ..."
        (
            "analytics:\n  drift: {window_s: 1, bucket_s: 3600}\n",
            "analytics.drift",
            "window_s (1 s) must be at least bucket_s (3600 s)",
        ),
        ("retrievers:\n  - {name: prod, kind: http}\n", "retrievers.0", "needs 'url'"),
        ("retrievers:\n  - {name: x, kind: nope}\n", "retrievers.0.kind", "bm25"),
        ("colour: blue\n", "colour", "unknown setting"),
        (
            "retrievers:\n  - {name: a, kind: bm25}\n  - {name: a, kind: tfidf}\n",
            "retrievers",
            "duplicate retriever names: a",
        ),
    ],
)
def test_bad_config_names_field_and_problem(
    tmp_path: Path, text: str, field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_write(tmp_path, text))
    message = str(info.value)
    assert "goldwatch.yaml" in message
    assert f"  {field}" in message
    assert problem in message


def test_missing_and_non_mapping_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(_write(tmp_path, "- 1\n- 2\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(_write(tmp_path, "a: [1,\n"))


def test_error_never_echoes_the_bad_value(tmp_path: Path) -> None:
    secret = "s3cr3t-token-value"
    path = _write(tmp_path, f"retrievers:\n  - {{name: p, kind: http, url: '{secret}'}}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert secret not in str(info.value)


def test_effective_config_masks_headers(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "retrievers:\n  - name: p\n    kind: http\n    url: 'http://127.0.0.1:9/'\n"
        "    headers: {Authorization: 'Bearer abc'}\n",
    )
    shown = effective_config(load_settings(path))
    assert shown["retrievers"][0]["headers"] == {"Authorization": "***"}


def test_unknown_retriever_lists_known_ones() -> None:
    with pytest.raises(KeyError, match="known: bm25, dense, hybrid, hybrid-lexical, tfidf"):
        load_settings().retriever("nope")


def test_env_value_that_is_not_json_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLDWATCH_EVAL__K", "1,5")
    with pytest.raises(ConfigError, match=r"GOLDWATCH_EVAL__K='\[1, 5, 10\]'"):
        load_settings()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GOLDWATCH_EVAL__K", "[" * 5000 + "]" * 5000),  # json.loads: RecursionError
        ("GOLDWATCH_EVAL__K", "[" * 65 + "1" + "]" * 65),  # one level over the bound
        ("GOLDWATCH_EVAL", '{"k": ' + "[" * 100 + "]" * 100 + "}"),  # a section as JSON
    ],
)
def test_env_json_nested_too_deep_is_a_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """A 5,000-deep list in GOLDWATCH_EVAL__K was a RecursionError traceback (exit 1): the
    environment's JSON gets the configuration file's depth bound (64 levels)."""
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value) == (
        f"invalid configuration (environment): {name}: JSON nested more than 64 levels"
    )


def test_env_json_at_the_depth_bound_and_brackets_in_strings_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """64 levels is within the bound (then an ordinary validation error), and brackets
    inside JSON strings are not nesting."""
    monkeypatch.setenv("GOLDWATCH_EVAL__K", "[" * 64 + "1" + "]" * 64)
    with pytest.raises(ConfigError, match=r"eval\.k\.0"):
        load_settings()
    monkeypatch.setenv("GOLDWATCH_EVAL__K", "[5, 1]")
    pattern = r"\[" * 70 + r"\"x"  # 70 escaped "[" then an escaped quote, in a JSON string
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__REFUSAL_PATTERNS", json.dumps([pattern]))
    settings = load_settings()
    assert settings.eval.k == (1, 5)
    assert settings.analytics.refusal_patterns == (pattern,)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("retrievers:\n  - {name: h, kind: hybrid, members: [bm25, nothere]}\n",
         "unknown members: nothere"),
        ("retrievers:\n  - {name: h, kind: hybrid, members: [h, bm25]}\n", "lists itself"),
        ("retrievers:\n  - {name: bm25, kind: http, url: 'http://x:1/'}\n",
         "would hide the built-in"),
    ],
)  # fmt: skip
def test_retriever_graph_is_checked_at_load(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_settings(_write(tmp_path, text))


def test_yaml_error_names_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML at line 3, column 1"):
        load_settings(_write(tmp_path, "eval:\n  k: [1,\n"))  # the list never closes


def test_a_shadow_retriever_built_on_the_corpus_needs_one() -> None:
    # A trial's `shadow: {production: bm25}` without a corpus passed config check, then every
    # gold-set run failed with a bare "EvalUsageError". An http retriever (or a hybrid of
    # http ones) searches no corpus of ours.
    from service.demo import demo_path
    from service.settings import ConfigError, load_settings

    gold = demo_path("gold.jsonl")
    expected = r"shadow\.production: 'bm25' searches the corpus, and a gold set but no corpus"
    with pytest.raises(ConfigError, match=expected):
        load_settings(gold_set=gold, shadow={"production": "bm25"})
    with pytest.raises(ConfigError, match=r"shadow\.candidates\[0\]\.retriever: 'hybrid'"):
        load_settings(gold_set=gold, shadow={"candidates": [{"name": "hybrid"}]})
    # no gold set (the packaged demo's file, to which the demo command adds both): gold-set
    # runs are off and say so
    assert load_settings(demo_path("goldwatch.yaml")).shadow.candidates
    remote = [{"name": "a", "kind": "http", "url": "http://127.0.0.1:9/a"},
              {"name": "b", "kind": "http", "url": "http://127.0.0.1:9/b"},
              {"name": "ab", "kind": "hybrid", "members": ["a", "b"]},
              {"name": "a-bm25", "kind": "hybrid", "members": ["a", "bm25"]}]  # fmt: skip
    shadow = {"production": "a", "candidates": [{"name": "ab"}]}
    settings = load_settings(gold_set=gold, retrievers=remote, shadow=shadow)
    assert settings.corpus is None and settings.shadow.production == "a"
    with pytest.raises(ConfigError, match="'a-bm25' searches the corpus"):
        load_settings(gold_set=gold, retrievers=remote,
                      shadow={"candidates": [{"name": "a-bm25"}]})  # fmt: skip


def test_shadow_candidates_must_name_known_retrievers() -> None:
    from service.settings import ConfigError, load_settings

    with pytest.raises(
        ConfigError, match=r"shadow\.candidates\[1\]\.retriever: unknown retriever 'sparse'"
    ):
        load_settings(
            shadow={"candidates": [{"name": "tfidf"}, {"name": "x", "retriever": "sparse"}]}
        )
    with pytest.raises(ConfigError, match=r"shadow\.production: unknown retriever 'prod'"):
        load_settings(shadow={"production": "prod"})
    with pytest.raises(ConfigError, match="duplicate shadow candidate names: a"):
        load_settings(
            shadow={
                "candidates": [
                    {"name": "a", "retriever": "bm25"},
                    {"name": "a", "retriever": "tfidf"},
                ]
            }
        )
    with pytest.raises(ConfigError, match="shadow.candidates.0.sample_rate"):
        load_settings(shadow={"candidates": [{"name": "bm25", "sample_rate": 1.5}]})


def test_misspelt_nested_env_variable_fails_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic-settings silently ignores GOLDWATCH_SOURCE__KIDN; a typo must not leave the
    # service running on the default it was meant to override.
    monkeypatch.setenv("GOLDWATCH_SOURCE__KIDN", "secret-value")
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert "GOLDWATCH_SOURCE__KIDN names no setting" in str(error.value)
    assert "(did you mean GOLDWATCH_SOURCE__KIND?)" in str(error.value)
    assert "secret-value" not in str(error.value)


# -- issue 18: misspelt settings suggest the nearest name; YAML paths are file-relative -----


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("analytics:\n  langauge: {min_letters: 2}\n",
         "  analytics.langauge: unknown setting (did you mean analytics.language?)"),
        ("gold_sett: g.jsonl\n", "  gold_sett: unknown setting (did you mean gold_set?)"),
        ("retrievers:\n  - {name: b, kind: bm25, prams: {}}\n",
         "  retrievers.0.prams: unknown setting (did you mean retrievers.0.params?)"),
        ("colour: blue\n", "  colour: unknown setting"),  # nothing close: no guess
    ],
)  # fmt: skip
def test_misspelt_yaml_key_suggests_the_nearest_setting(
    tmp_path: Path, text: str, line: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_write(tmp_path, text))
    assert line in str(info.value).splitlines()


def test_misspelt_env_variables_suggest_the_nearest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__LANGAUGE__MIN_LETTERS", "3")
    monkeypatch.setenv("GOLDWATCH_API__TOKNE", "s3cret-value-here")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert ("GOLDWATCH_ANALYTICS__LANGAUGE__MIN_LETTERS -> "
            "GOLDWATCH_ANALYTICS__LANGUAGE__MIN_LETTERS") in message  # fmt: skip
    assert "GOLDWATCH_API__TOKNE -> GOLDWATCH_API__TOKEN" in message
    assert "s3cret" not in message


def test_relative_yaml_paths_resolve_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "token.txt").write_text("a-token-of-32-characters-or-more-0123456789\n")
    config = folder / "goldwatch.yaml"
    config.write_text(
        "gold_set: gold.jsonl\ncorpus: ../data/corpus.jsonl\nstate: {path: st/s.sqlite}\n"
        "source: {kind: file, path: logs/q.jsonl}\napi: {token_file: token.txt}\n"
        f"eval: {{history: {tmp_path / 'abs.jsonl'}}}\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = load_settings(Path("..") / "conf" / "goldwatch.yaml")
    base = folder.resolve()
    assert settings.gold_set == base / "gold.jsonl"
    assert settings.corpus == base / ".." / "data" / "corpus.jsonl"
    assert settings.state.path == base / "st" / "s.sqlite"
    assert settings.source.path == base / "logs" / "q.jsonl"
    assert settings.api.token is not None  # read from conf/token.txt, not ./token.txt
    assert settings.eval.history == tmp_path / "abs.jsonl"  # absolute: as written
    assert settings.eval.misses == Path("goldwatch-misses.jsonl")  # default: cwd-relative
    # a GOLDWATCH_ variable stays relative to the current directory
    monkeypatch.setenv("GOLDWATCH_GOLD_SET", "mine.jsonl")
    assert load_settings(config).gold_set == Path("mine.jsonl")


@pytest.mark.parametrize(
    ("names", "unknown"),
    [
        # real nested fields, any case; an optional section (kafka) counts
        (["GOLDWATCH_EVAL__K", "goldwatch_api__token", "GOLDWATCH_KAFKA__SASL_PASSWORD"], []),
        (["GOLDWATCH_ANALYTICS__DRIFT__WINDOW_S"], []),
        # tool variables without the delimiter are not settings
        (["GOLDWATCH_LOCKED", "GOLDWATCH_ARTEFACTS", "GOLDWATCH_EVAL"], []),
        # a wrong section, a wrong field, a part below a plain value
        (["GOLDWATCH_SOUCE__KIND"], ["GOLDWATCH_SOUCE__KIND"]),
        (["GOLDWATCH_ANALYTICS__DRIFT__WINDOWS"], ["GOLDWATCH_ANALYTICS__DRIFT__WINDOWS"]),
        (["GOLDWATCH_SOURCE__KIND__X", "GOLDWATCH_EVAL__K"], ["GOLDWATCH_SOURCE__KIND__X"]),
        (["OTHER_SOURCE__KIDN"], []),
        # a section and its field joined by one underscore: silently ignored before
        (["GOLDWATCH_API_TOKEN", "GOLDWATCH_LOCKED"], ["GOLDWATCH_API_TOKEN"]),
        (["goldwatch_analytics_pii", "GOLDWATCH_GOLD_SET"], ["goldwatch_analytics_pii"]),
        (["GOLDWATCH_TEST_FAULT", "GOLDWATCH_SHARED_DATA", "GOLDWATCH_HELM_VENV"], []),
    ],
)
def test_unknown_environment_settings(names: list[str], unknown: list[str]) -> None:
    from service.settings import unknown_environment_settings

    assert unknown_environment_settings(dict.fromkeys(names, "1")) == unknown


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"api": {"port": True}}, "api.port"),
        ({"analytics": {"drift": {"window_s": False}}}, "analytics.drift.window_s"),
    ],
)
def test_true_or_false_is_not_a_number(overrides: dict[str, object], field: str) -> None:
    """YAML's ``port: true`` was read as port 1 (pydantic's lax mode; fresh-user trial)."""
    from service.settings import ConfigError, load_settings

    with pytest.raises(ConfigError, match=rf"{field}: must be a number, not true/false"):
        load_settings(**overrides)


@pytest.mark.parametrize(
    ("text", "field"),
    [("gold_set: ''\n", "gold_set"), ("corpus: '  '\n", "corpus"),
     ("state: {path: ''}\n", "state.path"), ("eval: {history: ''}\n", "eval.history"),
     ("source: {kind: file, path: ''}\n", "source.path")],
)  # fmt: skip
def test_an_empty_path_is_an_error_naming_the_setting(
    tmp_path: Path, text: str, field: str
) -> None:
    """An empty path was read as "." (the current folder) and failed later, unnamed."""
    with pytest.raises(ConfigError) as info:
        load_settings(_write(tmp_path, text))
    assert f"  {field}: must not be empty (leave it unset instead)" in str(info.value)


def test_an_empty_path_variable_is_an_error_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOLDWATCH_STATE__PATH", "")
    with pytest.raises(ConfigError, match="state.path: must not be empty"):
        load_settings()


def test_effective_configuration_is_the_same_in_every_process() -> None:
    """``harvest.generated_channels`` is a set: dumped in its iteration order, which follows
    string hashing (``PYTHONHASHSEED``), ``config check`` printed ["synthetic", "generated"]
    in one run and ["generated", "synthetic"] in another. Now sorted in every process."""
    import subprocess
    import sys

    code = ("import json; from service.settings import load_settings, effective_config; "
            "print(json.dumps(effective_config(load_settings()), sort_keys=True))")  # fmt: skip
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
        for seed in range(6)
    }  # fmt: skip
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["harvest"]["generated_channels"] == ["generated", "synthetic"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a trial: the later `source` won silently, serve ran with no source and sat idle
        ("source: {kind: kafka}\nkafka:\n  topic: rag\nsource: {kind: none}\n",
         "source is given twice (lines 1 and 4)"),
        ("analytics:\n  drift:\n    window_s: 3600\n    bucket_s: 60\n    window_s: 7200\n",
         "analytics.drift.window_s is given twice (lines 3 and 5)"),
        ("retrievers:\n  - {name: a, kind: bm25, name: b}\n",
         "retrievers[0].name is given twice (lines 2 and 2)"),
        # keys PyYAML builds alike are one key of its mapping (a review): True, and 1
        ("topics:\n  yes: a\n  on: b\n", "topics.on is given twice (as yes) (lines 2 and 3)"),
        ("topics:\n  1: a\n  0x1: b\n", "topics.0x1 is given twice (as 1) (lines 2 and 3)"),
    ],
)  # fmt: skip
def test_a_key_given_twice_is_a_config_error_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert str(info.value) == f"{path}: {message}; YAML keeps only the last: remove one"


def test_a_merged_key_overridden_is_not_a_repeated_key() -> None:
    """``<<: *base`` then ``k:`` overrides the merged ``k``: YAML's way, not a mistake."""
    text = "base: &b {k: [1, 5], n: 2}\nx:\n  <<: *b\n  k: [10]\n"
    assert load_yaml_bounded(text, "t") == {"base": {"k": [1, 5], "n": 2}, "x": {"k": [10], "n": 2}}
