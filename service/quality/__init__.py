"""Retrieval quality on live traffic: the quality stage, known-question matching against the
gold set, and document access control (ACL) checks.
"""
