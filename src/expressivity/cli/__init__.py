"""Command-line interface: thin commands over the Python API. Every command takes ``--json``."""
