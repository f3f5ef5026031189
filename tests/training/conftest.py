"""Fixtures for the training tests."""

import signal

import pytest
import torch


@pytest.fixture
def terminal_sigint():
    """SIGINT as at a terminal (Python's KeyboardInterrupt handler) for the test, whatever the test
    process inherited: a run started in the background (``nohup ... &``, some CI runners) inherits
    SIGINT ignored, and training rightly keeps an ignored SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def poison_first_member(monkeypatch):
    """``poison(stepper_class, step)``: the stepper's member 0 reports a NaN loss at ``step``
    (the others their own losses), to test how one non-finite member stops alone."""
    def poison(stepper, at_step):
        losses_of = stepper.losses

        def poisoned(self, step):
            losses = losses_of(self, step)
            if step != at_step:
                return losses
            return torch.where(torch.arange(self.size) == 0, torch.full_like(losses, float("nan")), losses)

        monkeypatch.setattr(stepper, "losses", poisoned)
    return poison
