"""Benchmarks: commands, not tests (see docs/benchmarks/)."""
