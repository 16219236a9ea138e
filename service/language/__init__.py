"""Language identification of questions: the detector (langdetect with a script pre-pass and
short-text rules), Unicode script classes, and Hinglish (romanised Hindi) detection.
"""
