"""The wave layout: catalog -> waves -> placement -> the generated files."""
