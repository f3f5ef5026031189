"""Fixtures for the training tests."""

import signal

import pytest


@pytest.fixture
def terminal_sigint():
    """SIGINT as at a terminal (Python's KeyboardInterrupt handler) for the test, whatever the test
    process inherited: a run started in the background (``nohup ... &``, some CI runners) inherits
    SIGINT ignored, and training rightly keeps an ignored SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
