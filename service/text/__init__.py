"""Text forms shared across the pipeline: :func:`normalise` (one function, explicit options)."""

from service.text.normalise import Fold, Separators, normalise

__all__ = ["Fold", "Separators", "normalise"]
