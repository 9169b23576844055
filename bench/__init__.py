"""Benchmarks for torchxray against torchinfo, treescope and bare torch: `python -m bench`."""
