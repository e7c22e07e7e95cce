"""The checks: one family of findings per module."""
