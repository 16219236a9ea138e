"""The Helm chart: copies identical to dashboards/, defaults that goldwatch accepts, env names
that map to real settings, and Helm v4's lint (helm-sdkpy, Python >= 3.12) on the default
values, on variants with every feature on, and on broken variants it must reject.

helm-sdkpy has no ``template``/dry-run action (its ``Install`` needs a cluster), so rendering
is checked through lint: lint renders every template with the chart's values.yaml and parses
the output, so each variant below is linted as a copy of the chart with its own values.yaml.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from service import __version__
from service.settings import Settings, load_settings
from tests.ops import opsfiles

CHART = opsfiles.CHART
LINT = Path(__file__).with_name("helm_lint.py")
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())

#: Variants that must lint clean: name -> values merged over the defaults.
GOOD: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything-on": {
        "replicaCount": 3,
        "config": {"kafka": {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"}},
        "secrets": {"apiToken": "t0ken", "kafkaSaslUsername": "u", "kafkaSaslPassword": "p"},
        "kafkaTls": {"enabled": True, "existingSecret": "kafka-ca", "certFile": "tls.crt",
                     "keyFile": "tls.key"},
        "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6},
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "dashboards": {"enabled": True, "namespace": "monitoring",
                       "annotations": {"grafana_folder": "goldwatch"}},
        "extraEnv": [{"name": "GOLDWATCH_PIPELINE__MAX_BATCH_SIZE", "value": "1000"}],
        "extraVolumes": [{"name": "gold", "configMap": {"name": "gold-set"}}],
        "extraVolumeMounts": [{"name": "gold", "mountPath": "/etc/goldwatch/gold"}],
        "podAnnotations": {"example.com/team": "rag"},
        "imagePullSecrets": [{"name": "ghcr"}],
        "priorityClassName": "high: priority",
    },
    "single-replica-with-pvc": {
        "persistence": {"enabled": True, "storageClass": "standard", "size": "5Gi"},
        "secrets": {"existingSecret": "goldwatch-secrets"},
        "podDisruptionBudget": {"enabled": False},
    },
}  # fmt: skip
#: Variants lint must reject: schema violations, and a rendered name Kubernetes refuses (proof
#: that lint renders the templates with these values). The templates' `fail` guards are not
#: among them: Helm's lint mode turns `fail` into a log line, so the schema repeats them.
BAD: dict[str, dict[str, Any]] = {
    "invalid-rendered-name": {"fullnameOverride": "Not_A_DNS_Name"},
    "pvc-with-two-replicas": {"replicaCount": 2, "persistence": {"enabled": True}},
    "pvc-with-autoscaling": {"persistence": {"enabled": True}, "autoscaling": {"enabled": True}},
    "token-in-configmap": {"config": {"api": {"token": "leaked"}}},
    "sasl-password-in-configmap": {"config": {"kafka": {"sasl_password": "leaked"}}},
    "writable-root": {"securityContext": {"readOnlyRootFilesystem": False}},
    "unknown-key": {"replicas": 3},
    "tls-without-secret": {"kafkaTls": {"enabled": True}},
}


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(
            out.get(key), dict) else copy.deepcopy(value)  # fmt: skip
    return out


def test_chart_copies_are_identical_to_dashboards() -> None:
    """Helm's .Files cannot read outside the chart: its copies must match byte for byte."""
    assert (CHART / "files" / "goldwatch.rules.yaml").read_bytes() == (
        opsfiles.RULES_FILE.read_bytes()
    )
    copies = sorted(p.name for p in (CHART / "dashboards").glob("*.json"))
    assert copies == sorted(opsfiles.dashboards())
    for name in copies:
        assert (CHART / "dashboards" / name).read_bytes() == (
            opsfiles.DASHBOARDS / name
        ).read_bytes()


def test_prometheusrule_spec_is_the_rules_file() -> None:
    """The template indents the file under `spec:`; emulate that and compare the groups."""
    template = (CHART / "templates" / "prometheusrule.yaml").read_text()
    assert '{{- .Files.Get "files/goldwatch.rules.yaml" | nindent 2 }}' in template
    text = (CHART / "files" / "goldwatch.rules.yaml").read_text()
    spec = "spec:" + "".join("\n  " + line if line else "\n" for line in text.splitlines())
    assert yaml.safe_load(spec)["spec"] == yaml.safe_load(opsfiles.RULES_FILE.read_text())


def test_dashboards_configmap_uses_the_copies_and_the_sidecar_label() -> None:
    template = (CHART / "templates" / "dashboards-configmap.yaml").read_text()
    assert '.Files.Glob "dashboards/*.json"' in template
    assert DEFAULTS["dashboards"]["labels"] == {"grafana_dashboard": "1"}
    assert DEFAULTS["serviceMonitor"]["enabled"] is False
    assert DEFAULTS["prometheusRule"]["enabled"] is False


def test_chart_and_image_versions_follow_the_package() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "goldwatch"
    assert chart["appVersion"] == __version__
    assert DEFAULTS["image"] == {"repository": "ghcr.io/goldwatch/goldwatch", "tag": "",
                                 "pullPolicy": "IfNotPresent"}  # fmt: skip
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    assert "default .Chart.AppVersion .Values.image.tag" in helpers


@pytest.mark.parametrize("variant", ["defaults", "everything-on"])
def test_configmap_config_is_accepted_by_goldwatch(
    variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rendered goldwatch.yaml (toYaml of values.config) plus the chart's env loads."""
    values = merged(DEFAULTS, GOOD[variant])
    path = tmp_path / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(values["config"]))
    monkeypatch.setenv("GOLDWATCH_KAFKA__SASL_USERNAME", "u")
    monkeypatch.setenv("GOLDWATCH_KAFKA__SASL_PASSWORD", "p")
    monkeypatch.setenv("GOLDWATCH_API__TOKEN", "t")
    settings = load_settings(path)
    assert str(settings.state.path).startswith("/var/lib/goldwatch/")
    assert settings.api.host == "0.0.0.0" and settings.api.port == DEFAULTS["service"]["port"]
    assert settings.source.kind == "kafka" and settings.kafka is not None


def _field_exists(path: list[str]) -> bool:
    model: Any = Settings
    for part in path:
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return False
        annotation = fields[part].annotation
        args = [a for a in getattr(annotation, "__args__", ()) if hasattr(a, "model_fields")]
        model = args[0] if args else annotation
    return True


def test_env_variables_of_the_deployment_are_real_settings() -> None:
    template = (CHART / "templates" / "deployment.yaml").read_text()
    names = re.findall(r"name: (GOLDWATCH_[A-Z_]+)", template)
    assert {"GOLDWATCH_API__TOKEN", "GOLDWATCH_KAFKA__SASL_PASSWORD"} <= set(names)
    for name in names:
        assert _field_exists(name.removeprefix("GOLDWATCH_").lower().split("__")), name


def test_deployment_probes_security_and_state_volume() -> None:
    template = (CHART / "templates" / "deployment.yaml").read_text()
    assert "path: /healthz" in template and "path: /readyz" in template
    # the port answers before the pipeline is loaded: startup asks /readyz, so its budget
    # covers the load (as /healthz did before serve accepted early); liveness asks /healthz
    probes = {m[0]: m[1] for m in re.findall(r"(\w+Probe):\s*httpGet:\s*path: (\S+)", template)}
    assert probes == {"startupProbe": "/readyz", "livenessProbe": "/healthz",
                      "readinessProbe": "/readyz"}  # fmt: skip
    assert "mountPath: /var/lib/goldwatch" in template and "emptyDir" in template
    context = DEFAULTS["securityContext"]
    assert context["readOnlyRootFilesystem"] and context["runAsNonRoot"]
    assert context["runAsUser"] == DEFAULTS["podSecurityContext"]["runAsUser"] == 10001
    assert DEFAULTS["resources"]["requests"] and DEFAULTS["resources"]["limits"]
    labels = (CHART / "templates" / "_helpers.tpl").read_text()
    for label in ("app.kubernetes.io/name", "app.kubernetes.io/instance",
                  "app.kubernetes.io/version", "app.kubernetes.io/managed-by"):  # fmt: skip
        assert label in labels
    notes = (CHART / "templates" / "NOTES.txt").read_text()
    assert "<=" in notes and "partitions" in notes


def test_open_traces_are_flushed_at_a_stop_only_without_persistence() -> None:
    """Without persistence the state is an emptyDir a rolling deploy replaces with the pod:
    open traces kept at a stop would go with it, so the chart hands them out (session 39,
    trial 24 HIGH 1); with the PersistentVolumeClaim it keeps the default (keep them)."""
    template = (CHART / "templates" / "deployment.yaml").read_text()
    block = re.search(r"\{\{-? if not \.Values\.persistence\.enabled \}\}(.*?)\{\{-? end \}\}",
                      template, re.S)  # fmt: skip
    assert block is not None
    assert re.search(r'name: GOLDWATCH_TRACES__FLUSH_ON_STOP\s+value: "true"', block.group(1))
    assert template.count("GOLDWATCH_TRACES__FLUSH_ON_STOP") == 1


def test_values_schema_is_json_and_covers_every_top_level_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert set(DEFAULTS) <= set(schema["properties"])


@pytest.fixture(scope="module")
def lint_results(helm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Lint the chart once per variant (one helm-sdkpy process for all)."""
    root = tmp_path_factory.mktemp("charts")
    paths = {}
    for name, override in {**GOOD, **BAD}.items():
        chart = root / name / "goldwatch"
        shutil.copytree(CHART, chart)
        (chart / "values.yaml").write_text(yaml.safe_dump(merged(DEFAULTS, override)))
        paths[name] = chart
    paths["defaults"] = CHART  # the chart as committed, values.yaml comments and all
    done = subprocess.run([helm_python, LINT, *map(str, paths.values())],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    charts = json.loads(done.stdout)["charts"]
    return {name: charts[str(path)] for name, path in paths.items()}


@pytest.mark.parametrize("variant", sorted(GOOD))
def test_helm_lint_passes(lint_results: dict[str, Any], variant: str) -> None:
    result = lint_results[variant]
    assert result["errors"] == [] and result["warnings"] == [], result


@pytest.mark.parametrize("variant", sorted(BAD))
def test_helm_lint_rejects(lint_results: dict[str, Any], variant: str) -> None:
    """Schema violations are errors; Helm v4 reports an invalid resource name as a warning."""
    result = lint_results[variant]
    assert result["errors"] or result["warnings"], f"lint accepted the broken variant {variant}"
