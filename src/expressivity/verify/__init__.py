"""Verifiers: checks of networks against mathematical claims (equivariance, lemma properties, errors, sizes)."""
