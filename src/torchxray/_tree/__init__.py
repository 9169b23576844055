"""Inspection, tree layer: the walk behind `tree.walk()` (records, traversal, lazy pass, totals)."""
