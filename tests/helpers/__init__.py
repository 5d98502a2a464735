"""Shared test helpers (the metric contract harness)."""
