"""Run Helm v4's lint on chart folders through helm-sdkpy and print the results as JSON.

Run with a Python >= 3.12 interpreter that has ``helm-sdkpy`` installed (tests/ops/test_helm.py
creates such a venv under ``~/.cache/goldwatch-helm``); it needs no cluster and no network::

    python3.12 tests/ops/helm_lint.py helm/goldwatch [more charts...]

Prints one JSON object: ``{"helm_sdkpy": version, "charts": {path: {"errors": [...],
"warnings": [...], "info": [...]}}}``; each message is ``{"path", "error"}``. helm-sdkpy
serialises Helm's ``support.Message`` with Go's ``encoding/json``, which turns the message's
``error`` into ``{}``: the file (``path``) and the severity survive, the text does not.
Exit status 0 when it ran (whatever it found), 2 when helm-sdkpy is missing or failed.
"""

from __future__ import annotations

import asyncio
import json
import sys

SEVERITIES = {1: "info", 2: "warnings", 3: "errors"}


def lint(chart: str) -> dict[str, list[dict[str, object]]]:
    """Lint one chart folder; messages grouped by severity."""
    import helm_sdkpy

    result = asyncio.run(helm_sdkpy.Lint(helm_sdkpy.Configuration()).run(chart))
    grouped: dict[str, list[dict[str, object]]] = {"errors": [], "warnings": [], "info": []}
    for message in result.get("Messages") or []:
        key = SEVERITIES.get(int(message.get("Severity", 3)), "errors")
        grouped[key].append({"path": message.get("Path"), "error": message.get("Err")})
    if result.get("Errors") and not grouped["errors"]:
        grouped["errors"].append({"path": chart, "error": result["Errors"]})
    return grouped


def main(argv: list[str]) -> int:
    try:
        import helm_sdkpy
    except ImportError as exc:
        print(f"helm-sdkpy is not installed for {sys.executable}: {exc}", file=sys.stderr)
        return 2
    try:
        charts = {chart: lint(chart) for chart in argv}
    except Exception as exc:  # helm_sdkpy.HelmError and friends: report, exit 2
        print(f"helm lint failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"helm_sdkpy": helm_sdkpy.__version__, "charts": charts}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
