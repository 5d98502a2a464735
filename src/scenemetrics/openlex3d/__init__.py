"""openlex3d room."""
