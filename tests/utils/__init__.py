"""Test helpers shared by several test modules and the examples (not public API)."""
