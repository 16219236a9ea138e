"""The topic model's data version: the same digest as before, without importing scikit-learn."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import sklearn

from service.topics.model import data_version


def test_data_version_is_the_digest_over_data_params_and_sklearn_version() -> None:
    texts, labels, params = ["fees?", "exam dates"], ["fees", "exams"], {"k": 2}
    blob = json.dumps([texts, labels, params, sklearn.__version__])  # the imported module's
    assert data_version(texts, labels, params) == hashlib.sha256(blob.encode()).hexdigest()[:12]


def test_data_version_does_not_import_sklearn() -> None:
    """A supervised topic fit needs nothing else of scikit-learn: importing it for a version
    string cost ~1 s of a cold start."""
    code = ("import sys; from service.topics.model import data_version; "
            "data_version(['a', 'b'], None, {}); print('sklearn' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "False"
