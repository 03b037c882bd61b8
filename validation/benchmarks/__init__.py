"""The benchmarks: each prints timings measured against a baseline run in the same process."""
