"""Robustness zoo: awkward models, bad input, faults, memory and untrusted messages."""
