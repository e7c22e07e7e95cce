"""The repository: the read-only `Tree` seam, the work tree, and git."""
