"""Question topics: the topic model (supervised from gold ``topic`` labels or unsupervised on
the embedding layer, with stable ids and readable labels) and its settings.
"""
