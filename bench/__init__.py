"""amlemu benchmarks: `python -m bench.run` (or `make bench`)."""
