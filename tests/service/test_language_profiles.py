"""langdetect's profiles (~45 ms to load) are loaded once per process, however many backends."""

from __future__ import annotations

import importlib

import pytest

from service.language.detector import LangdetectBackend


@pytest.mark.parametrize("module", ["langdetect", "langdetect_rs"])
def test_backends_share_the_module_factory(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    factories = importlib.import_module(f"{module}.detector_factory")
    monkeypatch.setattr(factories, "_factory", None)  # as in a fresh process
    loads: list[str] = []
    original = factories.DetectorFactory.load_profile

    def counting(self: object, directory: str) -> None:
        loads.append(directory)
        original(self, directory)

    monkeypatch.setattr(factories.DetectorFactory, "load_profile", counting)
    first, second = LangdetectBackend(module), LangdetectBackend(module)  # type: ignore[arg-type]
    unrestricted = first.probabilities("Wie spät ist es in Berlin?")  # detect_langs's factory
    restricted = second.probabilities("Wie spät ist es in Berlin?", restrict=["de", "en"])
    assert len(loads) == 1
    assert max(unrestricted, key=unrestricted.get) == "de"  # type: ignore[arg-type]
    assert max(restricted, key=restricted.get) == "de"  # type: ignore[arg-type]
