"""Probing layer: the run, call routing and recording, FLOPs, memo, inputs, failures and records
behind `probe.probe()`."""
