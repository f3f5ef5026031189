"""Figures (matplotlib, the ``[plots]`` extra). Each function writes one PNG and returns its path."""
