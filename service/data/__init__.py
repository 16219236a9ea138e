"""The user's data: the gold set and the corpus, read and validated."""
