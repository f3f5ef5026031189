"""A compiled RASP program: the network, its report, and tracr's ``apply`` interface.

``compiled.apply(["BOS", 1, 2, 3])`` returns an :class:`AssembledOutput`: ``decoded`` is the
output sequence with BOS's position included (as tracr's is; its entry is the BOS token),
``residuals`` the residual stream ``(n, d)`` after the input and after every layer, labelled by
``compiled.residual_labels`` (``name:value``, tracr's bases).

Decoding: a categorical output is the value whose dimension is largest (``None`` when every
dimension is below 1/2: an empty Aggregate); a numerical output is its dimension's number, exact
in exact arithmetic; in float arithmetic it is the nearest value of the SOp's value set when one
lies within ``NUMERIC_TOLERANCE`` (else the float itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

import numpy as np

from expressivity.constructions.report import ConstructionReport
from expressivity.network import Network, evaluate
from expressivity.network.exact import forward_exact
from expressivity.network.reference import forward
from expressivity.rasp.language import RASPError, SOp

NUMERIC_TOLERANCE = 1e-6


@dataclass
class AssembledOutput:
    """What ``apply`` returns: ``decoded`` (BOS first), ``residuals`` (list of ``(n, d)`` arrays), ``output``
    (the readout ``(n, d_out)``) and the arithmetic that produced them."""

    decoded: list
    residuals: list
    output: np.ndarray
    arithmetic: str


@dataclass
class CompiledProgram:
    """A program compiled to a verified network (see :func:`expressivity.rasp.compile`)."""

    program: SOp
    network: Network
    report: ConstructionReport
    vocab: list
    max_seq_len: int
    bos: str
    output_values: list
    output_numerical: bool
    causal: bool = False

    @property
    def residual_labels(self) -> tuple[str, ...]:
        return self.network.labels

    @property
    def exact(self) -> bool:
        """True when every attention layer is hardmax (the network can be run in exact arithmetic)."""
        return all(getattr(layer, "normalization", "hardmax") == "hardmax" for layer in self.network.layers)

    def token_ids(self, tokens) -> list[int]:
        """Input ids for ``tokens`` (BOS first); one-line :class:`RASPError` for anything else."""
        tokens = list(tokens)
        if not tokens or tokens[0] != self.bos:
            raise RASPError(f"an input starts with the BOS token {self.bos!r}, e.g. [{self.bos!r}, "
                            f"{', '.join(map(repr, self.vocab[:2]))}]")
        if len(tokens) - 1 > self.max_seq_len:
            raise RASPError(f"the program was compiled for at most {self.max_seq_len} tokens after BOS, got "
                            f"{len(tokens) - 1}; recompile with a larger max_seq_len")
        ids = [0]
        for i, t in enumerate(tokens[1:], start=1):
            matches = [k for k, v in enumerate(self.vocab) if v == t and type(v) is type(t)] or \
                [k for k, v in enumerate(self.vocab) if v == t]
            if not matches:
                raise RASPError(f"token {t!r} at position {i} is not in the vocabulary {self.vocab}")
            ids.append(matches[0] + 1)
        return ids

    def one_hot(self, ids) -> np.ndarray:
        ids = np.asarray(ids)
        return np.eye(len(self.vocab) + 1)[ids]

    def decode_row(self, row, exact: bool):
        if not self.output_numerical:
            values = [float(v) for v in row]
            if not values:          # an output that is always None has no dimension
                return None
            k = int(np.argmax(values))
            return self.output_values[k] if values[k] >= 0.5 else None
        v = row[0]
        if exact:
            v = Fraction(v) if not isinstance(v, (int, Fraction)) else v
            return int(v) if isinstance(v, Fraction) and v.denominator == 1 else v
        f = float(v)
        ordered, grid = self._float_grid
        k = int(np.clip(np.searchsorted(grid, f), 1, len(grid) - 1)) if len(grid) > 1 else 0
        best = min((k - 1, k) if len(grid) > 1 else (0,), key=lambda j: abs(grid[j] - f))
        return ordered[best] if abs(grid[best] - f) <= NUMERIC_TOLERANCE else f

    @cached_property
    def _float_grid(self) -> tuple[list, np.ndarray]:
        """The numerical output's values, sorted, and as floats: for nearest-value decoding."""
        ordered = sorted(self.output_values, key=float)
        return ordered, np.array([float(x) for x in ordered])

    def decode(self, output, exact: bool) -> list:
        """Decoded outputs ``(batch, n)`` from readouts ``(batch, n, d_out)``, BOS positions as ``bos``."""
        return [[self.bos] + [self.decode_row(row, exact) for row in seq[1:]] for seq in output]

    def apply(self, tokens, dtype: str | None = None) -> AssembledOutput:
        """Run the network on ``tokens`` (BOS first). ``dtype``: ``"exact"`` (default for hardmax networks) or
        ``"float64"`` (default for softmax ones)."""
        dtype = dtype or ("exact" if self.exact else "float64")
        X = self.one_hot(self.token_ids(tokens))
        if dtype == "exact":
            out, residuals = forward_exact(self.network, X.astype(int), return_residuals=True)
        elif dtype == "float64":
            out, residuals = forward(self.network, X, return_residuals=True)
        else:
            out = evaluate(self.network, X, dtype)
            residuals = []
        return AssembledOutput(self.decode([out], dtype == "exact")[0], list(residuals), out,
                               "exact rationals" if dtype == "exact" else dtype)
