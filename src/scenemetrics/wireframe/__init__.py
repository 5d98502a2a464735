"""wireframe room."""
