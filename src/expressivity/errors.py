"""Exceptions that carry a user-facing one-line message.

The CLI turns every :class:`ExpressivityError` into ``error: <message>`` on stderr and exit
code 2, with no traceback. Messages name the problem and, where there is one, the fix.
"""


class ExpressivityError(ValueError):
    """Base class for errors caused by input the user can correct."""


class NetworkError(ExpressivityError):
    """A network is malformed (shapes, activations, lengths)."""


class EvaluationError(ExpressivityError):
    """A network cannot be evaluated as asked (e.g. softmax in exact mode)."""


class BudgetError(ExpressivityError):
    """A requested object would exceed a size budget; the message carries the estimate."""
