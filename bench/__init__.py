"""The benchmark harness: `python -m bench` (see __main__.py)."""
