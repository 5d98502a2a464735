"""osim room."""
