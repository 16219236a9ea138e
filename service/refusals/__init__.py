"""Refusals and scope: the refusal detector (answer text -> refused?) and the out-of-scope
detector calibrated on the gold set, whose pair gives over- and under-refusals.
"""
