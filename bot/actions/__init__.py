"""Running as a GitHub/Gitea action: the run, the runner's event, workflow commands, the forges."""
