"""Layers with a leading ensemble axis: one code path for one model and for K models at once.

Every module of the trained family is built for ``members=None`` (one model) or ``members=K``
(an ensemble of K independent models of one architecture). With ``members=K`` every parameter
carries a leading axis ``K`` (a linear weight is ``(K, out, in)``) and every input and output a
leading axis ``K`` (``(K, batch, n, d)``, tokens as rows); members share nothing but the kernels
that run them (batched matmul, one grouped convolution). With ``members=None`` the parameters keep
their usual shapes (``(out, in)``: checkpoints, exports and conversions see plain models) and the
computation is the same code on a view with an ensemble axis of 1.

:meth:`EnsembleModule.run` is the computation, always on tensors with the ensemble axis;
``forward`` adds and removes the axis for a single model. ``weight_matrices`` names a module's own
parameters that weight decay applies to (nanoGPT's rule: matrices that multiply activations,
embeddings and tables of vectors; never biases, norm parameters or slopes).
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn


_INIT = threading.local()   # per thread: a model built on another thread meanwhile is initialised as usual


def _drawing_initial_values() -> bool:
    return getattr(_INIT, "draw", True)


@contextmanager
def without_initial_values():
    """Build modules (on this thread) without drawing their initial values: parameters stay
    ``torch.empty`` and the global generator is not advanced. Only for a module whose every
    parameter is overwritten next (:meth:`expressivity.nn.model.Model.stack`: K draws per
    parameter saved)."""
    before = _drawing_initial_values()
    _INIT.draw = False
    try:
        yield
    finally:
        _INIT.draw = before


class EnsembleModule(nn.Module):
    """Base class: ``members`` is ``None`` (one model) or the ensemble size ``K``."""

    weight_matrices: tuple[str, ...] = ()

    def __init__(self, members: int | None = None):
        super().__init__()
        self.members = members

    @property
    def size(self) -> int:
        """The ensemble size ``K`` (1 for one model)."""
        return 1 if self.members is None else self.members

    def shape(self, *shape: int) -> tuple[int, ...]:
        """A parameter's shape: ``shape`` for one model, ``(K, *shape)`` for an ensemble."""
        return shape if self.members is None else (self.members, *shape)

    def stacked(self, t: torch.Tensor | None) -> torch.Tensor | None:
        """``t`` with its ensemble axis (a leading axis of 1 added for one model)."""
        if t is None or self.members is not None:
            return t
        return t.unsqueeze(0)

    def unstacked(self, t: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`stacked` on an output."""
        return t if self.members is not None else t.squeeze(0)

    def members_to_draw(self) -> range:
        """The members whose initial values are drawn now, in order (none inside :func:`without_initial_values`)."""
        return range(self.size if _drawing_initial_values() else 0)

    def init_members(self, param: torch.Tensor, init) -> None:
        """Initialise each member's slice of ``param`` with ``init(slice)`` (in member order;
        nothing inside :func:`without_initial_values`)."""
        with torch.no_grad():
            for k in self.members_to_draw():
                init(param if self.members is None else param[k])

    def run(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.unstacked(self.run(self.stacked(x)))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ W^T + b`` per member: ``x`` ``(K, ..., in)``, ``weight`` ``(K, out, in)``, ``bias`` ``(K, out)``."""
    K, lead, d_in = x.shape[0], x.shape[1:-1], x.shape[-1]
    d_out = weight.shape[1]
    rows = x.reshape(K, -1, d_in)
    if d_out == 1:
        # One output (a scalar readout): W x^T, whose (K, 1, rows) is the (K, rows, 1) wanted.
        # Measured against x W^T at K = 8 (claims 3 and 4): 2.4x faster forward, 1.4x with the
        # backward, and member k stays within float32 ulps of the single model (bit for bit on
        # the CPU where it was measured, not on every MKL kernel), where x W^T's batched kernel
        # let one member drift 7.5e-4; for one model both give the same numbers
        # (tests/nn/test_layers.py).
        xT = rows.transpose(1, 2)
        out = torch.bmm(weight, xT) if bias is None else torch.baddbmm(bias.unsqueeze(-1), weight, xT)
        return out.view(K, *lead, 1)
    # W^T of one input column ((K, out, 1) transposed) has strides torch's bmm takes for a
    # column-major matrix of leading dimension 1, and multiplies 2-3x slower by (scalar inputs);
    # a row-major (K, 1, out) view holds the same numbers, and products of one term are exact
    w = weight.reshape(K, 1, d_out) if d_in == 1 else weight.transpose(1, 2)
    out = torch.bmm(rows, w) if bias is None else torch.baddbmm(bias.unsqueeze(1), rows, w)
    return out.view(K, *lead, d_out)


class Linear(EnsembleModule):
    """``y = x W^T + b``; weight ``(out, in)`` or ``(K, out, in)``, initialised as ``torch.nn.Linear``."""

    weight_matrices = ("weight",)

    def __init__(self, d_in: int, d_out: int, bias: bool = True, members: int | None = None):
        super().__init__(members)
        self.d_in, self.d_out = d_in, d_out
        self.weight = nn.Parameter(torch.empty(self.shape(d_out, d_in)))
        self.register_parameter("bias", nn.Parameter(torch.empty(self.shape(d_out))) if bias else None)
        bound = 1 / math.sqrt(d_in) if d_in > 0 else 0.0
        for k in self.members_to_draw():   # torch.nn.Linear's initialisation, member by member
            with torch.no_grad():
                nn.init.kaiming_uniform_(self.weight if members is None else self.weight[k], a=math.sqrt(5))
                if bias:
                    nn.init.uniform_(self.bias if members is None else self.bias[k], -bound, bound)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.stacked(self.weight), self.stacked(self.bias))


class Embedding(EnsembleModule):
    """Token ids ``(K, ...)`` -> vectors ``(K, ..., d)``; table ``(vocab, d)`` or ``(K, vocab, d)``, N(0, 1) initialised."""

    weight_matrices = ("weight",)

    def __init__(self, vocab: int, d: int, members: int | None = None):
        super().__init__(members)
        self.weight = nn.Parameter(torch.empty(self.shape(vocab, d)))
        self.init_members(self.weight, nn.init.normal_)

    def run(self, ids: torch.Tensor) -> torch.Tensor:
        w = self.stacked(self.weight)
        K, vocab = w.shape[:2]
        # member k reads rows k * vocab + id of the members' tables laid end to end: one lookup
        offsets = (torch.arange(K, device=ids.device) * vocab).view(K, *[1] * (ids.dim() - 1))
        return F.embedding(ids + offsets, w.reshape(K * vocab, -1))


class LayerNorm(EnsembleModule):
    """Layer norm over the last axis with a gain and a bias per member (``eps`` as torch's default)."""

    def __init__(self, d: int, members: int | None = None, eps: float = 1e-5):
        super().__init__(members)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.shape(d)))
        self.bias = nn.Parameter(torch.zeros(self.shape(d)))

    def run(self, x: torch.Tensor) -> torch.Tensor:
        K, d = x.shape[0], x.shape[-1]
        spread = (K, *[1] * (x.dim() - 2), d)
        w, b = self.stacked(self.weight).view(spread), self.stacked(self.bias).view(spread)
        return torch.addcmul(b, F.layer_norm(x, (d,), eps=self.eps), w)


def weight_matrix_names(model: nn.Module) -> set[str]:
    """Names (as in ``named_parameters``) of the parameters weight decay applies to: the
    ``weight_matrices`` each module declares for itself."""
    names = set()
    for prefix, module in model.named_modules():
        for name in getattr(module, "weight_matrices", ()):
            if getattr(module, name, None) is not None:
                names.add(f"{prefix}.{name}" if prefix else name)
    return names
