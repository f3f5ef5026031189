"""A compiled RASP program: the network, its report, and tracr's ``apply`` interface.

``compiled.apply(["BOS", 1, 2, 3])`` returns an :class:`AssembledOutput` (tracr's fields, without
tracr's batch axis): ``decoded`` is the output sequence with BOS's position included (as tracr's
is; its entry is the BOS token, and a trailing PAD token stays PAD); ``residuals`` the residual
stream ``(n, d)`` after the input and after every layer, labelled by ``compiled.residual_labels``
(``name:value``, tracr's bases); ``layer_outputs`` what each layer added; ``attn_logits`` each
attention layer's scores ``(heads, n_query, n_key)``. ``compiled.input_encoder`` /
``output_encoder`` are tracr's encoders (:mod:`.encoders`).

Decoding: a categorical output is the value whose dimension is largest (``None`` when every
dimension is below 1/2: an empty Aggregate). A numerical output in exact arithmetic is its
dimension's number, exact (an ``int`` or ``Fraction``, as :func:`~expressivity.rasp.evaluate`
gives it). In float arithmetic (``float64``, ``float32``) it is a Python ``float``: the nearest
value of the SOp's value set when one lies within ``NUMERIC_TOLERANCE`` (then it equals
``float`` of the interpreter's value), else the float the network computed, and the position is
listed in ``off_value_set``. Every call returns one number type for a numerical output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from expressivity.constructions.report import ConstructionReport
from expressivity.network import Network, evaluate
from expressivity.network.numbers import exact_number, to_exact
from expressivity.rasp.encoders import CategoricalEncoder, InputEncoder, NumericalEncoder
from expressivity.rasp.language import RASPError, SOp

NUMERIC_TOLERANCE = 1e-6
APPLY_DTYPES = ("exact", "float64", "float32")


@dataclass
class AssembledOutput:
    """What ``apply`` returns (tracr's ``AssembledTransformerModelOutput``, one sequence, no batch axis).

    ``decoded``: one value per input position (BOS first). ``residuals``: ``(n, d)`` arrays, the
    stream after the input and after every layer. ``output``: the readout ``(n, d_out)``. Arrays
    cover the positions before any padding; ``arithmetic`` says what computed them (exact: object
    arrays of ``int`` / ``Fraction``). ``off_value_set``: positions whose numerical output lay
    farther than ``NUMERIC_TOLERANCE`` from every value the SOp can take (float arithmetic only;
    empty on a verified input). ``layer_outputs`` and ``attn_logits`` are computed from the
    residuals when first read (an exact run's logits are exact too)."""

    decoded: list
    residuals: list
    output: np.ndarray
    arithmetic: str
    off_value_set: list = field(default_factory=list)
    layers: tuple = field(default=(), repr=False)   # the network's layers, for the logits

    @cached_property
    def layer_outputs(self) -> list:
        """``(n, d)`` per layer: what it added to the residual stream."""
        return [after - before for before, after in zip(self.residuals, self.residuals[1:])]

    @cached_property
    def attn_logits(self) -> list:
        """Per attention layer ``(heads, n_query, n_key)``: the scores ``lam (x_q W_Q + b_Q) . (x_k W_K)`` (plus
        any position bias) it attends with; ``-inf`` where a causal mask hides the key."""
        exact = self.arithmetic.startswith("exact")
        return [attention_logits(layer, H, exact) for layer, H in zip(self.layers, self.residuals)
                if layer.kind == "attention"]

    @property
    def input_embeddings(self) -> np.ndarray:
        """The residual stream after the input (tracr's name): ``residuals[0]``."""
        return self.residuals[0]

    @property
    def transformer_output(self) -> np.ndarray:
        """The residual stream after the last layer (tracr's name): ``residuals[-1]``."""
        return self.residuals[-1]


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
    pad: str | None = None

    @property
    def residual_labels(self) -> tuple[str, ...]:
        return self.network.labels

    @property
    def exact(self) -> bool:
        """True when every attention layer is hardmax (the network can be run in exact arithmetic)."""
        return all(getattr(layer, "normalization", "hardmax") == "hardmax" for layer in self.network.layers)

    @cached_property
    def input_encoder(self) -> InputEncoder:
        """Tokens (BOS first, optional trailing PAD) -> input ids; tracr's ``input_encoder``."""
        return InputEncoder(self.vocab, self.bos, self.pad, self.max_seq_len)

    @cached_property
    def output_encoder(self) -> CategoricalEncoder | NumericalEncoder:
        """Output column -> value (categorical output) or the identity (numerical); tracr's ``output_encoder``."""
        return NumericalEncoder() if self.output_numerical else CategoricalEncoder(self.output_values)

    def token_ids(self, tokens) -> list[int]:
        """Input ids for ``tokens`` (BOS first, no padding); one-line :class:`RASPError` for anything else."""
        ids = self.input_encoder.encode(tokens)
        if self.pad is not None and self.input_encoder.pad_encoding in ids:
            raise RASPError("token_ids takes an unpadded input; apply() strips trailing PAD tokens")
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
        nearest = self.nearest_value(float(v))
        return nearest if nearest is not None else float(v)

    def nearest_value(self, f: float):
        """The value of the numerical output's value set nearest to ``f`` when within ``NUMERIC_TOLERANCE``, else
        ``None``."""
        ordered, grid = self._float_grid
        if not len(grid):
            return None
        k = int(np.clip(np.searchsorted(grid, f), 1, len(grid) - 1)) if len(grid) > 1 else 0
        best = min((k - 1, k) if len(grid) > 1 else (0,), key=lambda j: abs(grid[j] - f))
        return ordered[best] if abs(grid[best] - f) <= NUMERIC_TOLERANCE else None

    @cached_property
    def _float_grid(self) -> tuple[list, np.ndarray]:
        """The numerical output's values, sorted, and as floats: for nearest-value decoding."""
        ordered = sorted(self.output_values, key=float)
        return ordered, np.array([float(x) for x in ordered])

    def decode(self, output, exact: bool) -> list:
        """Decoded outputs ``(batch, n)`` from readouts ``(batch, n, d_out)``, BOS positions as ``bos``."""
        return [[self.bos] + [self.decode_row(row, exact) for row in seq[1:]] for seq in output]

    def apply(self, tokens, dtype: str | None = None) -> AssembledOutput:
        """Run the network on ``tokens`` (BOS first; trailing PAD tokens allowed when compiled with a PAD).

        ``dtype``: ``"exact"`` (default for hardmax networks: the claim is exact), ``"float64"`` (default for
        softmax ones; the NumPy reference pass: their claim) or ``"float32"`` (PyTorch). See the module notes for
        what each returns. Like tracr's ``apply`` it runs in whichever arithmetic is asked, inside the claim or not
        (``self.network.input_domain.arithmetic`` names the claim's; :func:`~expressivity.network.evaluate` and
        ``expressivity run`` refuse the others)."""
        dtype = dtype or ("exact" if self.exact else "float64")
        if dtype not in APPLY_DTYPES:
            raise RASPError(f"dtype must be one of {', '.join(APPLY_DTYPES)}, got {dtype!r}")
        if dtype == "exact" and not self.exact:
            raise RASPError("a softmax network has no exact value; apply it with dtype='float64' or 'float32'")
        ids = self.input_encoder.encode(tokens)
        real = self.input_encoder.unpadded_length(list(tokens))
        X = self.one_hot(ids[:real])
        # tracr's interface runs the network in any arithmetic: a hardmax network's claim is exact, a softmax one's
        # float64 (or none, checked on samples); `expressivity run` and evaluate() refuse the others
        out, residuals = evaluate(self.network, X.astype(int) if dtype == "exact" else X, dtype,
                                  return_residuals=True, allow_outside=True)
        decoded = self.decode([out], dtype == "exact")[0]
        off = []
        if self.output_numerical and dtype != "exact":
            off = [i for i, row in enumerate(out) if i > 0 and self.nearest_value(float(row[0])) is None]
            decoded = decoded[:1] + [float(v) for v in decoded[1:]]
        return AssembledOutput(decoded + [self.pad] * (len(ids) - real), list(residuals), out,
                               "exact rationals" if dtype == "exact" else dtype, off, self.network.layers)


def attention_logits(layer, H: np.ndarray, exact: bool) -> np.ndarray:
    """Scores ``(heads, n_query, n_key)`` of an attention ``layer`` on the residual stream ``H`` ``(n, d)`` it
    reads: ``lam (H W_Q + b_Q) (H W_K)^T`` plus any position bias, ``-inf`` where a causal mask hides the key.
    ``exact``: an object array of ``int`` / ``Fraction``; else float64 (from ``H`` as given)."""
    n = H.shape[0]
    convert = to_exact if exact else (lambda a: np.asarray(a, dtype=np.float64))
    lam = exact_number(layer.inverse_temperature) if exact else float(layer.inverse_temperature)
    H = convert(H)
    heads = []
    for head in layer.heads:
        scores = np.zeros((n, n), dtype=object if exact else np.float64)
        if not head.is_dp_free:
            scores = lam * ((H @ convert(head.W_Q) + convert(head.b_Q)) @ (H @ convert(head.W_K)).T)
        if head.position_bias is not None:
            scores = scores + convert(head.position_bias.matrix(n))
        if layer.causal:
            scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        heads.append(scores)
    return np.stack(heads) if heads else np.zeros((0, n, n))
