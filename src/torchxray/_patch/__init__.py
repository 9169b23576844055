"""Patching layer: slot bookkeeping, fitting a replacement in place, and replay code for `patch.PatchLog`."""
