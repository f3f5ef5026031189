"""``python -m expressivity ARGS`` is the ``expressivity`` command (for a checkout run from its
source, ``PYTHONPATH=src``, where no console script is installed: a GPU machine's own Python)."""

from expressivity.cli.main import main

if __name__ == "__main__":
    main()
