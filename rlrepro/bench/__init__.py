"""Benchmarks: figures and ratios printed side by side in one run on the same cores (never asserted by tests)."""
