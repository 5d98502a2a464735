"""callbacks room."""
