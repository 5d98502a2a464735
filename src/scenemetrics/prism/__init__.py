"""prism room."""
