"""Scoring retrievers on the gold set with trec_eval's semantics: IR metrics (recall@k, hit
rate, MRR, nDCG), evaluation, comparison, reports, answers, history, TREC run/qrels I/O,
detector quality (ROC AUC), and the ``goldwatch eval`` job.
"""
