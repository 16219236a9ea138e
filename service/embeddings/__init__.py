"""The embedding layer: one protocol (``embed(texts) -> float32, L2-normalised``), the
shipped WordLlama default, the other backends (character n-grams, TF-IDF/LSA,
sentence-transformers) and their settings.
"""
