"""Inspection, source layer: finding definitions in text and in notebook cells for `source.source()`."""
