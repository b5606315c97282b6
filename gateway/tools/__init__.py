"""Offline command-line tools that read the layers but never run in `serve`: `lint` (cache-breaking patterns)."""
