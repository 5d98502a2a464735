"""puzzlesim room."""
