"""Edits of hand-maintained files that clear a finding."""
