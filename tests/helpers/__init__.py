"""Code shared by tests (never imported from conftest.py)."""
