"""Shared by the export tests: TransformerLens is an extra; ``make test`` installs it and requires it."""

import os

import pytest


@pytest.fixture(scope="session")
def tl():
    """TransformerLens, imported; skipped when missing (a failure when EXPRESSIVITY_REQUIRE_INTERP=1, as ``make test`` sets)."""
    try:
        import transformer_lens
    except ImportError:
        if os.environ.get("EXPRESSIVITY_REQUIRE_INTERP") == "1":
            pytest.fail("TransformerLens is required (EXPRESSIVITY_REQUIRE_INTERP=1): pip install 'expressivity[interp]'")
        pytest.skip("TransformerLens is not installed (pip install 'expressivity[interp]')")
    return transformer_lens
