"""Helpers of `diff` and `stats`: chunked float64 reads of tensors, and checkpoint readers."""
