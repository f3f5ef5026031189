"""Target sequence functions for the Yun et al. compiler and for training tasks.

A target maps a batch of sequences to a batch of sequences of the same shape:
``fn(X) -> Y`` with ``X, Y`` of shape ``(batch, n, d)`` (tokens as rows), inputs in
``[0, 1]``, float64. Permutation-equivariant targets (``f(X P) = f(X) P`` in the paper's
column convention, i.e. permuting tokens permutes outputs) are the class of Theorem 2;
every continuous target is in the class of Theorem 3 (positional encoding).

User targets are given as ``module:function``; they are wrapped so that NaN, inf or a wrong
output shape becomes a one-line :class:`~expressivity.errors.ExpressivityError`.
"""

from __future__ import annotations

import importlib
import os
import sys
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from typing import Callable

import numpy as np

from expressivity.errors import ExpressivityError

TargetFn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Target:
    """A named target ``fn: (batch, n, d) -> (batch, n, d)`` on ``[0, 1]^{n x d}``.

    Attributes:
        name: the name used on the command line.
        fn: the map, float64 in and out.
        equivariant: True if permuting input tokens permutes output tokens the same way.
        description: one line for listings.
        source, source_sha256: a user function's module file (absolute) and the SHA-256 of its bytes when it
            was imported, ``None`` for a built-in target: what a run record needs to say which code it ran
            (a sweep kept the results of a target's old code under the same run ids: an audit, 2026-11-28).
    """

    name: str
    fn: TargetFn
    equivariant: bool
    description: str
    source: str | None = None
    source_sha256: str | None = None

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.fn(X)


# ---- built-in targets ----------------------------------------------------------------------


def _mean_shift(X: np.ndarray) -> np.ndarray:
    return X + X.mean(axis=1, keepdims=True)


def _attention_weights(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Fixed, seed-independent weights so the target is the same function in every run.
    rng = np.random.default_rng(20200101 + d)
    scale = 2.0 / np.sqrt(d)
    return tuple(rng.normal(0.0, scale, size=(d, d)) for _ in range(3))  # type: ignore[return-value]


def _attention(X: np.ndarray) -> np.ndarray:
    d = X.shape[-1]
    W_Q, W_K, W_V = _attention_weights(d)
    scores = (X @ W_Q) @ (X @ W_K).transpose(0, 2, 1)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return X + weights @ (X @ W_V)


def _smooth_rank(X: np.ndarray, temperature: float = 0.1) -> np.ndarray:
    # Per coordinate: (1/n) sum_j sigmoid((x_i - x_j) / T), a smooth stand-in for the rank.
    diff = (X[:, :, None, :] - X[:, None, :, :]) / temperature
    return (1.0 / (1.0 + np.exp(-diff))).mean(axis=2)


def _pairwise_distance(X: np.ndarray) -> np.ndarray:
    # Mean Euclidean distance to every token, written into every coordinate.
    dist = np.sqrt(((X[:, :, None, :] - X[:, None, :, :]) ** 2).sum(axis=-1))
    return np.repeat(dist.mean(axis=2, keepdims=True), X.shape[-1], axis=2) if X.shape[-1] else dist


def _reverse(X: np.ndarray) -> np.ndarray:
    return X[:, ::-1, :].copy()


def _prefix_mean(X: np.ndarray) -> np.ndarray:
    counts = np.arange(1, X.shape[1] + 1, dtype=np.float64)[None, :, None]
    return np.cumsum(X, axis=1) / counts


def _sort(X: np.ndarray) -> np.ndarray:
    # Tokens sorted by their first coordinate (stable): the output ignores input order.
    order = np.argsort(X[:, :, 0], axis=1, kind="stable")
    return np.take_along_axis(X, order[:, :, None], axis=1)


_BUILTINS: tuple[Target, ...] = (
    Target("mean-shift", _mean_shift, True, "x_i + mean_j x_j (mean-field shift)"),
    Target("attention", _attention, True, "one softmax self-attention layer with fixed weights"),
    Target("smooth-rank", _smooth_rank, True, "per coordinate, mean_j sigmoid((x_i - x_j)/0.1)"),
    Target("pairwise-distance", _pairwise_distance, True, "mean_j ||x_i - x_j||_2 in every coordinate"),
    Target("reverse", _reverse, False, "token order reversed"),
    Target("prefix-mean", _prefix_mean, False, "mean of tokens 0..i"),
    Target("sort", _sort, False, "tokens sorted by first coordinate"),
)


def list_targets() -> list[Target]:
    """The built-in targets, equivariant ones first."""
    return list(_BUILTINS)


def get_target(spec: str) -> Target:
    """A built-in target by name, or a user function given as ``module:function``.

    A user function is assumed non-equivariant (so Theorem 2 mode samples it; see
    :func:`check_equivariance`) and is wrapped by :func:`validated`.
    """
    for t in _BUILTINS:
        if t.name == spec:
            return t
    names = ", ".join(t.name for t in _BUILTINS)
    if not isinstance(spec, str) or ":" not in spec:
        raise ExpressivityError(f"unknown target {spec!r}; use one of {names}, or module:function")
    module_name, _, attr = spec.partition(":")
    if not module_name.strip() or not attr.strip():
        raise ExpressivityError(f"target {spec!r} must be module:function with both parts named, e.g. mytargets:f")
    try:
        with _user_code():
            module = importlib.import_module(module_name)
    except ImportError as exc:
        # a file name typed for a module name (mytarget.py:f) is the usual slip: say the spelling that works
        from pathlib import Path

        folder = Path(module_name).parent
        hint = (f"; give the module's name, not its file: {Path(module_name).stem}:{attr} (run from "
                f"{'its folder' if str(folder) == '.' else folder}, or put that folder on PYTHONPATH)"
                if module_name.endswith(".py") else
                " (run from the module's folder, or put it on PYTHONPATH)")
        raise ExpressivityError(f"cannot import module {module_name!r} for target {spec!r}: {exc}{hint}") from None
    except SyntaxError as exc:
        raise ExpressivityError(f"module {module_name!r} has a syntax error (line {exc.lineno}: {exc.msg}); "
                                "fix it and try again") from None
    except (Exception, SystemExit) as exc:  # a user module can fail in any way while importing
        raise ExpressivityError(f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ExpressivityError(f"module {module_name!r} has no callable {attr!r}; give module:function")
    doc = (getattr(fn, "__doc__", None) or "user target").strip().splitlines()
    source, digest = _source_of(module, fn)
    return Target(spec, validated(fn, spec), bool(getattr(fn, "equivariant", False)), doc[0] if doc else "user target",
                  source, digest)


# (function, its module's file, the file's SHA-256 when the function was first seen), by id of the function: the
# file as it was when imported, which is the code that runs (a file rewritten since, while the process keeps the
# old module, was hashed anew: a review, 2026-11-28); the function is held so its id is not reused
_SOURCES: dict[int, tuple] = {}


def _source_of(module, fn) -> tuple[str | None, str | None]:
    """``fn``'s module file (absolute) and the SHA-256 of its bytes when ``fn`` was first seen, or ``(None, None)``
    where the module has no file (``(path, None)`` where it cannot be read)."""
    import hashlib

    known = _SOURCES.get(id(fn))
    if known is not None and known[0] is fn:
        return known[1], known[2]
    path = getattr(module, "__file__", None)
    if not path:
        return None, None
    try:
        with open(path, "rb") as f:
            facts = os.path.abspath(path), hashlib.sha256(f.read()).hexdigest()
    except OSError:
        facts = os.path.abspath(path), None
    _SOURCES[id(fn)] = (fn, *facts)
    return facts


@contextmanager
def _user_code(import_path: bool = True):
    """Run user code with the current folder importable (as ``python -m`` would) and its prints
    sent to stderr, so ``--json`` output on stdout stays one JSON value."""
    added = import_path and "" not in sys.path and os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        if added and os.getcwd() in sys.path:
            sys.path.remove(os.getcwd())


def validated(fn: TargetFn, name: str) -> TargetFn:
    """Wrap ``fn`` so bad outputs become a clear :class:`ExpressivityError`."""

    def wrapper(X: np.ndarray) -> np.ndarray:
        try:
            with _user_code(import_path=False):
                Y = fn(np.array(X, dtype=np.float64, copy=True))
        except ExpressivityError:
            raise
        except (Exception, SystemExit) as exc:  # a user function can fail in any way; report it in one line
            raise ExpressivityError(f"target {name!r} raised {type(exc).__name__}: {exc}") from None
        if np.iscomplexobj(Y):
            raise ExpressivityError(f"target {name!r} returned complex values; it must return real numbers")
        try:
            Y = np.asarray(Y, dtype=np.float64)
        except (TypeError, ValueError):
            raise ExpressivityError(f"target {name!r} returned something that is not a numeric array") from None
        if Y.shape != X.shape:
            raise ExpressivityError(f"target {name!r} returned shape {Y.shape} for input {X.shape}; it must return the input's shape (batch, n, d)")
        if not np.all(np.isfinite(Y)):
            bad = "NaN" if np.any(np.isnan(Y)) else "inf"
            raise ExpressivityError(f"target {name!r} returned {bad} values; it must be finite on [0, 1]^(n x d)")
        return Y

    return wrapper


def evaluate_target(target: Target, X: np.ndarray) -> np.ndarray:
    """``target.fn(X)`` with shape and finiteness checked (built-ins included)."""
    return validated(target.fn, target.name)(X)


@dataclass(frozen=True)
class EquivarianceCheck:
    """Result of a sampled equivariance check: max |f(X[perm]) - f(X)[perm]| over samples."""

    max_error: float
    samples: int
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.max_error <= self.tolerance


def check_equivariance(target: Target, n: int, d: int, samples: int = 64, seed: int = 0,
                       tolerance: float = 1e-9) -> EquivarianceCheck:
    """Sample ``X`` uniformly in ``[0,1]^{n x d}`` and a random token permutation per sample.

    Returns the largest entry-wise deviation (float64 arithmetic); ``passed`` compares it
    with ``tolerance`` scaled by the output magnitude.
    """
    rng = np.random.default_rng(seed)
    X = rng.random((samples, n, d))
    perms = np.argsort(rng.random((samples, n)), axis=1)
    Y = evaluate_target(target, X)
    Yp = evaluate_target(target, np.take_along_axis(X, perms[:, :, None], axis=1))
    err = float(np.max(np.abs(Yp - np.take_along_axis(Y, perms[:, :, None], axis=1)), initial=0.0))
    scale = max(1.0, float(np.max(np.abs(Y), initial=0.0)))
    return EquivarianceCheck(err, samples, tolerance * scale)


def require_equivariant(target: Target, n: int, d: int, samples: int = 64, seed: int = 0) -> EquivarianceCheck:
    """Refuse (ExpressivityError) a target that fails the sampled check, pointing to --positional."""
    result = check_equivariance(target, n, d, samples, seed)
    if not result.passed:
        raise ExpressivityError(
            f"target {target.name!r} is not permutation-equivariant (max deviation {result.max_error:.3g} "
            f"over {samples} sampled permutations); Theorem 2 needs an equivariant target: use --positional (Theorem 3)"
        )
    return result
