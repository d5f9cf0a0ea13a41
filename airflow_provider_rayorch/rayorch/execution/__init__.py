"""Executors: the in-process reference backend and the Ray backend."""
