"""kustomize as Flux runs it: the static evaluator and the repository's kustomizations."""
