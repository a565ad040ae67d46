"""Benchmarks run by `make bench`: figures and ratios measured side by side in one run."""
