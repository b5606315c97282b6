"""Benchmark scripts (not tests): each prints its figures against a same-run baseline."""
