"""Facts about a :class:`Network`'s input: token ids or values, which dimensions a user fills, an example.

Tokens are rows: an input is ``(n, d_in)``. These are read from the network (its embedding and
the ``metadata`` its builder saved), so exporters and the commands that run saved networks ask
the same questions of the same place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from expressivity.errors import NetworkError

if TYPE_CHECKING:
    from expressivity.network.network import Network


def one_hot(ids, vocab_size: int) -> np.ndarray:
    """Token ids ``(..., n)`` -> float64 one-hot rows ``(..., n, vocab_size)`` (the input of a token network)."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise NetworkError(f"vocab_size must be a whole number >= 1, got {vocab_size!r}")
    vocab_size = int(vocab_size)
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" or (ids.size and (ids.min() < 0 or ids.max() >= vocab_size)):
        raise NetworkError(f"token ids must be integers in [0, {vocab_size}); got {ids.dtype} ids")
    # the rows only (np.eye(vocab_size)[ids] held vocab_size^2 floats: 20 GB at GPT-2's 50,257; an audit, 2026-11-28)
    out = np.zeros((*ids.shape, vocab_size))
    np.put_along_axis(out, ids[..., None].astype(np.intp), 1.0, axis=-1)
    return out


def takes_tokens(net: Network) -> bool:
    """True when the network's inputs are one-hot tokens (trained token models, imported TransformerLens models)."""
    config = net.metadata.get("model_config")
    if isinstance(config, dict) and isinstance(config.get("vocab_size"), int) and config["vocab_size"] > 0:
        return net.embedding is not None
    return net.metadata.get("input") == "tokens" and net.embedding is not None


def input_dims(net: Network) -> list[int] | None:
    """Indices of the input dimensions the network's metadata names (``input_dims``), if any."""
    names = net.metadata.get("input_dims")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return None
    if not all(n in net.input_labels for n in names):
        return None
    return [net.input_labels.index(n) for n in names]


def input_help(net: Network) -> str:
    """How to write an input for this network, in one sentence."""
    valid = net.lengths
    if valid.is_any:
        count = "any number of tokens"
    elif valid.values is not None:
        count = f"exactly {valid.values[0]} tokens" if len(valid.values) == 1 else f"{valid.describe()} tokens"
    else:
        count = f"{valid.lo} to {valid.hi} tokens" if valid.hi is not None else f"at least {valid.lo} tokens"
    if takes_tokens(net):
        return f"token ids in 0..{net.d_in - 1}, e.g. '0,1,2' ({count})"
    dims = input_dims(net)
    if dims is not None:
        names = ", ".join(net.input_labels[k] for k in dims)
        if len(dims) == 1:
            return f"one value of {names} per token, e.g. '1,2,3' ({count})"
        return f"{len(dims)} values ({names}) per token, tokens separated by ';' ({count})"
    if net.d_in == 1:
        return f"one value per token, e.g. '0.5,1,2' ({count})"
    return f"{net.d_in} values per token ({', '.join(net.input_labels[:6])}{'...' if net.d_in > 6 else ''}), tokens " \
           f"separated by ';' ({count})"


def default_input(net: Network, length: int | None = None, seed: int = 0) -> np.ndarray:
    """A readable example input ``(n, d_in)`` (float64) inside the network's input domain: ``1..n`` in
    the named input dimension, random token ids, or values in [-1, 1) rounded to two decimals; where
    that is outside the domain, a sample of the domain (rounded where that stays inside)."""
    rng = np.random.default_rng(seed)
    n = length or net.lengths.closest(6)
    X = np.zeros((n, net.d_in))
    dims = input_dims(net)
    if takes_tokens(net):
        X[np.arange(n), rng.integers(0, net.d_in, size=n)] = 1.0
    elif dims is not None and len(dims) == 1:
        X[:, dims[0]] = np.arange(1, n + 1)
    else:
        cols = dims if dims is not None else list(range(net.d_in))
        X[:, cols] = np.round(rng.uniform(-1.0, 1.0, size=(n, len(cols))), 2)
    domain = net.input_domain
    if domain is None or domain.violation(X, net.input_labels) is None:
        return X
    sample = domain.sample(rng, 1, n, net.input_labels)[0]
    rounded = np.round(sample, 2)
    return rounded if domain.violation(rounded, net.input_labels) is None else sample
