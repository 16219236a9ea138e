"""Reliability and security suite: faults and hostile input against the real service."""
