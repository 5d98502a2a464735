"""Test suite (a regular package, so `tests.utils` wins over top-level `tests` packages some dependencies install)."""
