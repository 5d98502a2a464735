"""inpainting room."""
