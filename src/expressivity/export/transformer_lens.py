"""TransformerLens 4 export and import: our networks as ``TransformerBridge.boot_native`` models and back.

**Export** (:func:`to_transformer_lens`, :func:`save_transformer_lens`) writes a folder that
TransformerLens 4.3 loads with its own API::

    cfg = TransformerBridgeConfig(**json.load(open(DIR / "config.json")))
    bridge = TransformerBridge.boot_native(cfg, dtype=torch.float64)   # or float32
    bridge.load_state_dict(safetensors.torch.load_file(DIR / "model.safetensors"), strict=True)
    logits, cache = bridge.run_with_cache(X @ bridge.state_dict()["embed.weight"])

``config.json`` holds the ``TransformerBridgeConfig`` arguments, ``model.safetensors`` the
bridge's state-dict names (float64), ``expressivity.json`` the residual labels, which network
layer became which block, what the export changed and what it cost. The contract: the residual
stream's first ``d`` dimensions are the network's own, in order; added dimensions come after. For
an input ``X`` ``(batch, n, d_in)`` of the network (tokens as rows), ``X @ W_E`` (``W_E`` =
``embed.weight``, ``(d_in, d_model)``: the network's embedding, or the zero padding of ``X`` to
``d_model`` when it has none) given to the bridge as float input embeddings yields the
network's output as the bridge's logits; for token networks (one-hot inputs) the token ids do
the same. Hooks line up: ``blocks.{b}.hook_resid_mid`` / ``hook_resid_post`` hold our residual
stream after the layer that became block ``b``'s attention / MLP (its first ``d`` entries), and
``blocks.{b}.attn.hook_pattern[:, h]`` our head ``h``'s attention weights.

How the semantics are matched (TransformerLens facts checked in its 4.3.0 source,
``model_bridge/sources/native/model.py``):

* TransformerLens divides scores by ``sqrt(d_head)`` (``attn_scale=1`` is refused for
  ``d_head > 1``): ``sqrt(d_head)`` and the inverse temperature are folded into ``W_Q``, ``b_Q``.
* It has no additive attention bias (ALiBi is refused by the native model; a float mask is only
  thresholded). A position bias ``B`` is realised exactly by ``n_ctx`` one-hot position dimensions
  written by ``pos_embed``: the query reads ``sqrt(d_head) B[i, :]``, the key ``e_j``, so ``q.k``
  carries ``B[i, j]``. Cost: ``n_ctx`` residual dimensions for the whole model and ``n_ctx``
  query/key dimensions in every head that has a bias (``d_head`` is the widest head). A ``-inf``
  bias entry becomes :data:`MASKED_SCORE`. Not with layer norm (it would read those dimensions)
  nor rotary (TransformerLens drops ``pos_embed`` then).
* Blocks are ``attention then MLP``: consecutive attention layers get a zero MLP between them, a
  feed-forward layer with no attention before it a zero attention; heads and widths are padded
  with zeros (padded heads' patterns are uniform and unused).
* Rotary heads: TransformerLens rotates adjacent pairs ``(2k, 2k+1)``, we rotate ``(k, k + m/2)``
  (same frequencies): the query/key columns are permuted. TransformerLens computes its rotary
  tables in float32, so rotary networks agree only to float32 precision (1e-5), even in float64.
* Softmax over the visible keys only. Hardmax layers export exactly when every head's scores tie
  (uniform attention, e.g. the ``mean`` and ``sum`` circuits), or as softmax of ``lam`` times the
  scores with ``hardmax_lambda=lam`` (the weight off the arg-max is then at most
  ``(n-1) exp(-lam g)`` per query, ``g`` the smallest score gap); otherwise they are refused.
  Refused with the fix: piecewise-linear activations (soften first), the infinite-past
  normaliser, mixing layers (a fixed mix is not a softmax pattern), mixed causality, mixed
  activations, layer norm on some layers only.

**Import** (:func:`from_transformer_lens`, :func:`network_from_config`) turns a native model
(no norm, LayerNorm or LNPre; ReLU or GELU; attention-only or not; standard or rotary positions;
grouped keys/values) into a :class:`Network` computing the same function on one-hot token
inputs (``b_K`` cancels in softmax; ``b_V W_O + b_O`` is added by a width-0 feed-forward layer).
Classic ``HookedTransformer`` checkpoints (``blocks.0.attn.W_Q [H, D, DH]`` ...) are converted
first with TransformerLens's ``convert_tl_checkpoint``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network.activations import GELU, ReLU
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, LayerNorm
from expressivity.network.network import Network
from expressivity.records import jsonable

FORMAT = "expressivity.transformer-lens/1"
TL_VERSION = "4.3.0"          # the TransformerLens release these conversions were checked against
DEFAULT_N_CTX = 64            # positions of a network that fixes none
MAX_N_CTX = 4096
MASKED_SCORE = -1e9           # a -inf bias entry: exp(MASKED_SCORE - max) is exactly 0 in float32 and float64
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}
ROTARY_FLOAT64_TOLERANCE = 1e-5   # TransformerLens's rotary tables are float32 even in a float64 model
INSTALL = "pip install 'expressivity[interp]' (TransformerLens 4.3)"
_ACT_NAMES = {"relu": "relu", "gelu": "gelu"}


class ExportError(ExpressivityError):
    """A network that TransformerLens cannot express as it is (the message says why and the fix)."""


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TLExport:
    """A network as a TransformerLens native model: config arguments, state dict, and the map back.

    ``state_dict`` uses the bridge's names and flat ``nn.Linear`` layout ``[out, in]`` (float64).
    ``labels`` names all ``d_model`` residual dimensions (the network's own first).
    ``layers`` says, per network layer, which block it became and which hooks show it.
    ``network`` is the network the bridge computes exactly: the exported one, or, after
    ``hardmax_lambda``, its copy with those hardmax layers made softmax.
    """

    config: dict
    state_dict: dict[str, np.ndarray]
    labels: tuple[str, ...]
    layers: tuple[dict, ...]
    d: int
    d_in: int
    d_out: int
    cost: dict
    changes: tuple[str, ...] = ()
    input_labels: tuple[str, ...] = ()
    output_labels: tuple[str, ...] = ()
    tokens: bool = False
    rotary: bool = False
    hardmax_lambda: float | None = None
    source: dict = field(default_factory=dict)
    network: Network | None = field(default=None, compare=False)
    input_bias: tuple[float, ...] | None = None

    @property
    def tolerance(self) -> dict[str, float]:
        """Relative output tolerance per TransformerLens dtype."""
        return {"float32": TOLERANCE["float32"],
                "float64": ROTARY_FLOAT64_TOLERANCE if self.rotary else TOLERANCE["float64"]}

    def description(self) -> dict:
        """The ``expressivity.json`` of the export folder."""
        return jsonable({"format": FORMAT, "transformer_lens": TL_VERSION, "labels": list(self.labels), "d": self.d,
                         "d_in": self.d_in, "d_out": self.d_out, "input_labels": list(self.input_labels),
                         "output_labels": list(self.output_labels), "tokens": self.tokens, "layers": list(self.layers), "cost": self.cost,
                         "changes": list(self.changes), "tolerance": self.tolerance,
                         "hardmax_lambda": self.hardmax_lambda, "source": self.source,
                         "input_bias": None if self.input_bias is None else list(self.input_bias),
                         "input": "bridge(X @ embed.weight" + (" + input_bias" if self.input_bias else "")
                                  + ") for an input X (batch, n, d_in), tokens as rows"
                                  + ("; or bridge(token_ids)" if self.tokens else "")})


def _f64(a, what: str) -> np.ndarray:
    try:
        out = np.asarray(a, dtype=np.float64)
    except OverflowError:
        raise ExportError(f"{what} holds a number beyond the float64 range; TransformerLens stores floats") from None
    return out


def _finite(a: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(a)):
        raise ExportError(f"{what} has a non-finite entry; TransformerLens weights must be finite numbers")
    return a


def _blocks(net: Network) -> list[list]:
    """Group the layers into TransformerLens blocks ``[attention index | None, feed-forward index | None]``."""
    blocks: list[list] = []
    for k, layer in enumerate(net.layers):
        if layer.kind == "mixing":
            raise ExportError(f"layer {k} ({layer.name or 'mixing'}) mixes tokens by a fixed matrix or convolution, "
                              "which is not a softmax attention pattern; TransformerLens cannot express it "
                              "(export a network of attention and feed-forward layers)")
        if layer.kind == "attention":
            blocks.append([k, None])
        elif blocks and blocks[-1][1] is None:
            blocks[-1][1] = k
        else:
            blocks.append([None, k])
    return blocks


def _uniform(head: Head, n: int, causal: bool) -> bool:
    """True when the head's scores tie over the visible keys for every input (so hardmax = softmax = uniform)."""
    no_dot = head.is_dp_free or not np.any(_f64(head.W_K, "W_K")) or not (np.any(_f64(head.W_Q, "W_Q"))
                                                                          or np.any(_f64(head.b_Q, "b_Q")))
    return no_dot and not _bias_matters(head, n, causal)


def _bias_matrix(head: Head, n: int) -> np.ndarray:
    return _f64(head.position_bias.matrix(n), "a position bias")


def _bias_matters(head: Head, n: int, causal: bool) -> bool:
    """False when the bias is constant over the visible keys of each query (softmax ignores it then)."""
    if head.position_bias is None:
        return False
    B = _bias_matrix(head, n)
    visible = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    for i in range(n):
        row = B[i][visible[i]]
        if not np.all(row == row[0]):
            return True
    return False


def _n_ctx(net: Network, n_ctx: int | None) -> int:
    fixed = net.max_length or net.length
    if n_ctx is None:
        return fixed or DEFAULT_N_CTX
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, (int, np.integer)) or not 1 <= n_ctx <= MAX_N_CTX:
        raise ExportError(f"n_ctx must be an integer in 1..{MAX_N_CTX}, got {n_ctx!r}")
    if fixed is not None and n_ctx > fixed:
        raise ExportError(f"the network takes at most {fixed} tokens; give n_ctx <= {fixed} or leave it out")
    if net.length is not None and n_ctx != net.length:
        raise ExportError(f"the network takes exactly {net.length} tokens; give n_ctx = {net.length} or leave it out")
    return int(n_ctx)


def _norm_type(net: Network, blocks: list[list]) -> tuple[str | None, float]:
    """``None`` (no norms anywhere) or ``"LN"`` (every layer and the output, one eps)."""
    norms = [(f"layer {k}", net.layers[k].norm) for b in blocks for k in b if k is not None]
    norms.append(("the final norm", net.final_norm))
    present = [where for where, n in norms if n is not None]
    if not present:
        return None, 1e-5
    absent = [where for where, n in norms if n is None]
    if absent:
        raise ExportError(f"{present[0]} has a layer norm but {absent[0]} has none; TransformerLens normalises every "
                          "block and the output or none of them (give every layer a pre-norm and a final norm, or none)")
    eps = {float(n.eps) for _, n in norms}
    if len(eps) > 1:
        raise ExportError(f"the layer norms use different eps {sorted(eps)}; TransformerLens has one eps for all")
    return "LN", eps.pop()


def _activation(net: Network) -> str:
    acts = {}
    for k, layer in enumerate(net.layers):
        if layer.kind != "feedforward":
            continue
        kind = layer.activation.kind
        if kind not in _ACT_NAMES:
            raise ExportError(f"layer {k} ({layer.name or 'feed-forward'}) uses a piecewise-linear activation, which "
                              "TransformerLens does not have; soften it first (yun build --out saves the softened "
                              "softmax/ReLU network beside the modified one)")
        acts.setdefault(kind, k)
    if len(acts) > 1:
        raise ExportError(f"layer {acts['relu']} uses ReLU and layer {acts['gelu']} GELU; TransformerLens has one "
                          "activation for the whole model")
    return _ACT_NAMES[next(iter(acts), "relu")]


def _attention_plan(net: Network, n: int, hardmax_lambda: float | None, margin: tuple[str, float] | None):
    """Per attention layer: its score multiplier for the dot product and for the bias, and the changes made."""
    plan, changes = {}, []
    for k, layer in enumerate(net.layers):
        if layer.kind != "attention":
            continue
        where = f"layer {k} ({layer.name or 'attention'})"
        if layer.normaliser == "infinite":
            raise ExportError(f"{where} normalises over an infinite past (Wang & E 2024 §7): early queries get less "
                              "than unit mass, which a softmax over the keys present cannot give, so TransformerLens "
                              "cannot express it; export a network whose DP-free layers normalise over the visible keys "
                              "(a trained dpfree model with dpfree_normaliser='visible', or wang-e build --memory "
                              "adaptive --beta 8), or study this one with expressivity run / show")
        lam = float(layer.inverse_temperature)
        if not math.isfinite(lam):
            raise ExportError(f"{where} has an infinite inverse temperature; use hardmax with a finite one")
        if layer.normalization == "softmax":
            plan[k] = (lam, 1.0)
            continue
        if all(_uniform(h, n, layer.causal) for h in layer.heads):
            plan[k] = (0.0, 0.0)
            changes.append(f"{where}: hardmax over scores that tie on every input is uniform attention, exported "
                           "exactly as softmax")
            continue
        if hardmax_lambda is None:
            hint = ""
            if margin is not None:
                key, g = margin
                lam_hint = math.log(max(n - 1, 1) / 1e-10) / g if g > 0 else None
                hint = (f"; with the score gap g = {g:.6g} of report.json margins.{key}, lam = {lam_hint:.4g} keeps that "
                        "weight below 1e-10" if lam_hint else "")
            raise ExportError(f"{where} uses hardmax, which TransformerLens (softmax only) cannot express; soften it "
                              "first (circuits: give a finite --scale; yun build --out saves the softened network), or "
                              "export with --hardmax-lambda LAM: each hardmax layer becomes softmax of LAM times its "
                              f"scores, and the weight off the arg-max is then at most (n-1)*exp(-LAM*g) per query, g "
                              f"the smallest score gap{hint}")
        plan[k] = (hardmax_lambda * lam, hardmax_lambda)
        bound = ""
        if margin is not None and margin[1] > 0:
            bound = (f"; with the score gap g = {margin[1]:.6g} (report.json margins.{margin[0]}) that is at most "
                     f"{max(n - 1, 0) * math.exp(-hardmax_lambda * margin[1]):.3g}")
        changes.append(f"{where}: hardmax exported as softmax of {hardmax_lambda:g} x its scores; the weight off the "
                       f"arg-max keys is at most (n-1)*exp(-{hardmax_lambda:g}*g) per query, g the smallest score gap"
                       + bound)
    return plan, changes


def _rotary_width(net: Network) -> int | None:
    """The one query width of the rotary heads, or ``None`` when no head is rotary."""
    widths, plain = {}, None
    for k, layer in enumerate(net.layers):
        if layer.kind != "attention":
            continue
        for h, head in enumerate(layer.heads):
            if head.rotary:
                widths.setdefault(head.size, (k, h))
            elif not head.is_dp_free and np.any(_f64(head.W_Q, "W_Q")) | np.any(_f64(head.b_Q, "b_Q")):
                plain = plain or (k, h)
    if not widths:
        return None
    if plain is not None:
        raise ExportError(f"layer {plain[0]} head {plain[1]} is not rotary but other heads are; TransformerLens rotates "
                          "every head of a rotary model (make every dot-product head rotary, or none)")
    if len(widths) > 1:
        raise ExportError(f"rotary heads of query widths {sorted(widths)}; TransformerLens has one rotary_dim (their "
                          "frequencies depend on the width)")
    return next(iter(widths))


def to_transformer_lens(net: Network, *, n_ctx: int | None = None, hardmax_lambda: float | None = None,
                        margin: tuple[str, float] | None = None, source: dict | None = None) -> TLExport:
    """``net`` as a TransformerLens native model (see the module notes for the contract).

    Args:
        n_ctx: positions of the TransformerLens model (default: the network's length, else
            :data:`DEFAULT_N_CTX`); a position bias costs ``n_ctx`` residual dimensions.
        hardmax_lambda: export hardmax layers as softmax of this multiple of their scores.
        margin: ``(name, g)``, a score gap the construction guarantees, to state the hardmax bound.
        source: facts about where the network came from, kept in ``expressivity.json``.

    Raises :class:`ExportError` naming the first part TransformerLens cannot express and the fix.
    """
    if hardmax_lambda is not None and not (isinstance(hardmax_lambda, (int, float)) and not isinstance(hardmax_lambda, bool)
                                           and math.isfinite(hardmax_lambda) and hardmax_lambda > 0):
        raise ExportError(f"hardmax_lambda must be a finite number > 0, got {hardmax_lambda!r}")
    n = _n_ctx(net, n_ctx)
    blocks = _blocks(net)
    if not blocks:
        raise ExportError("the network has no layers; TransformerLens needs at least one block")
    norm_type, eps = _norm_type(net, blocks)
    act = _activation(net)
    plan, changes = _attention_plan(net, n, hardmax_lambda, margin)
    if hardmax_lambda is not None and not any(net.layers[k].normalization == "hardmax" and plan[k] != (0.0, 0.0)
                                              for k in plan):
        raise ExportError("hardmax_lambda applies only to hardmax layers whose scores do not tie, and this network has "
                          "none; drop it")
    attn = [net.layers[b[0]] for b in blocks if b[0] is not None]
    causal = {layer.causal for layer in attn}
    if len(causal) > 1:
        raise ExportError("some attention layers are causal and others not; TransformerLens has one attention_dir")
    rotary_m = _rotary_width(net)
    biased = {(k, h) for k in plan for h, head in enumerate(net.layers[k].heads)
              if plan[k][1] != 0 and _bias_matters(head, n, net.layers[k].causal)}
    if biased and norm_type is not None:
        k, h = min(biased)
        raise ExportError(f"layer {k} head {h} has a position bias; TransformerLens has no attention bias, and the "
                          "one-hot position dimensions that would carry it would change every layer norm; export it "
                          "without layer norms, or drop the bias")
    if biased and rotary_m is not None:
        raise ExportError("the network has rotary heads and a position bias; TransformerLens drops the position "
                          "embedding that would carry the bias in rotary models")
    if rotary_m is not None and net.positional_encoding is not None:
        raise ExportError("the network has rotary heads and a positional encoding; TransformerLens has either rotary "
                          "or a position embedding")
    d, P = net.d, (n if biased else 0)
    D = d + P
    n_heads = max([len(layer.heads) for layer in attn], default=1)
    widths = [max(head.size + (P if (k, h) in biased else 0), head.W_V.shape[1])
              for k in plan for h, head in enumerate(net.layers[k].heads)]
    d_head = max(widths + [rotary_m or 0, 1])
    ffn = [net.layers[b[1]] for b in blocks if b[1] is not None]
    d_mlp = max([layer.width for layer in ffn] + [1])
    s = math.sqrt(d_head)

    sd: dict[str, np.ndarray] = {}
    E_in = np.zeros((net.d_in, D))
    E_in[:, :d] = np.eye(d) if net.embedding is None else _finite(_f64(net.embedding, "the embedding"), "the embedding")
    sd["embed.weight"] = E_in
    if rotary_m is None:
        pos = np.zeros((n, D))
        if net.positional_encoding is not None:
            pos[:, :d] = _finite(_f64(net.positional_encoding, "the positional encoding")[:n], "the positional encoding")
        if net.embedding_bias is not None:
            pos[:, :d] += _finite(_f64(net.embedding_bias, "the embedding bias"), "the embedding bias")
        if P:
            pos[:, d:] = np.eye(n)
        sd["pos_embed.weight"] = pos
    input_bias = None
    if rotary_m is not None and net.embedding_bias is not None:
        input_bias = np.zeros(D)
        input_bias[:d] = _finite(_f64(net.embedding_bias, "the embedding bias"), "the embedding bias")
        changes.append("rotary TransformerLens models have no position embedding to carry the embedding bias: give the "
                       "bridge X @ embed.weight + input_bias (expressivity.json)")

    layer_map = []
    for b, (ka, kf) in enumerate(blocks):
        pre = f"blocks.{b}."
        q = np.zeros((n_heads * d_head, D))
        qb = np.zeros(n_heads * d_head)
        kw, vw, ow = np.zeros_like(q), np.zeros_like(q), np.zeros((D, n_heads * d_head))
        if ka is not None:
            layer = net.layers[ka]
            dot, bias_mult = plan[ka]
            for h, head in enumerate(layer.heads):
                where = f"layer {ka} head {h}"
                r0, m, mv = h * d_head, head.size, head.W_V.shape[1]
                WQ, WK = (_finite(_f64(w, where), where) for w in (head.W_Q, head.W_K))
                bQ = _finite(_f64(head.b_Q, where), where)
                cols = np.arange(m)
                if head.rotary:   # ours pairs (k, k + m/2); TransformerLens pairs (2k, 2k + 1)
                    cols = np.empty(m, dtype=int)
                    cols[0::2], cols[1::2] = np.arange(m // 2), np.arange(m // 2) + m // 2
                if m and dot != 0:
                    with np.errstate(over="ignore"):   # an overflow is refused below, by name
                        q[r0:r0 + m, :d] = s * dot * WQ[:, cols].T
                        qb[r0:r0 + m] = s * dot * bQ[cols]
                    kw[r0:r0 + m, :d] = WK[:, cols].T
                if (ka, h) in biased:
                    with np.errstate(over="ignore", invalid="ignore"):
                        B = _bias_matrix(head, n) * bias_mult
                        if np.any(np.isnan(B)) or np.any(B == np.inf):
                            raise ExportError(f"{where}: its position bias has a NaN or +inf entry")
                        B = np.where(B == -np.inf, MASKED_SCORE, B)
                        q[r0 + m:r0 + m + P, d:] = s * B.T   # q_extra[i] = s * B[i, :]
                    kw[r0 + m:r0 + m + P, d:] = np.eye(P)  # k_extra[j] = e_j
                vw[r0:r0 + mv, :d] = _finite(_f64(head.W_V, where), where).T
                ow[:d, r0:r0 + mv] = _finite(_f64(head.W_O, where), where).T
            layer_map.append({"layer": ka, "kind": "attention", "name": layer.name, "block": b, "heads": len(layer.heads),
                              "hook_pattern": pre + "attn.hook_pattern",
                              "hook_resid": pre + ("hook_resid_mid" if ffn else "hook_resid_post")})
        sd |= {pre + "attn.q.weight": q, pre + "attn.q.bias": qb, pre + "attn.k.weight": kw,
               pre + "attn.k.bias": np.zeros_like(qb), pre + "attn.v.weight": vw, pre + "attn.v.bias": np.zeros_like(qb),
               pre + "attn.o.weight": ow, pre + "attn.o.bias": np.zeros(D)}
        if ffn:
            w_in, b_in, w_out, b_out = np.zeros((d_mlp, D)), np.zeros(d_mlp), np.zeros((D, d_mlp)), np.zeros(D)
            if kf is not None:
                layer = net.layers[kf]
                where = f"layer {kf}"
                r = layer.width
                w_in[:r, :d] = _finite(_f64(layer.W_1, where), where).T
                b_in[:r] = _finite(_f64(layer.b_1, where), where)
                w_out[:d, :r] = _finite(_f64(layer.W_2, where), where).T
                b_out[:d] = _finite(_f64(layer.b_2, where), where)
                layer_map.append({"layer": kf, "kind": "feedforward", "name": layer.name, "block": b,
                                  "hook_resid": pre + "hook_resid_post"})
            sd |= {pre + "mlp.in.weight": w_in, pre + "mlp.in.bias": b_in, pre + "mlp.out.weight": w_out,
                   pre + "mlp.out.bias": b_out}
        if norm_type is not None:
            for ln, k in (("ln1", ka), ("ln2", kf)):
                if ln == "ln2" and not ffn:
                    continue
                norm = None if k is None else net.layers[k].norm
                sd[pre + ln + ".weight"] = np.ones(D) if norm is None else _f64(norm.gain, "a layer norm")
                sd[pre + ln + ".bias"] = np.zeros(D) if norm is None else _f64(norm.bias, "a layer norm")
    if norm_type is not None:
        sd["ln_final.weight"] = _f64(net.final_norm.gain, "the final norm")
        sd["ln_final.bias"] = _f64(net.final_norm.bias, "the final norm")
    U = np.zeros((net.d_out, D))
    U[:, :d] = np.eye(d) if net.readout is None else _finite(_f64(net.readout, "the readout"), "the readout").T
    sd["unembed.weight"] = U
    sd["unembed.bias"] = (np.zeros(net.d_out) if net.readout_bias is None
                          else _finite(_f64(net.readout_bias, "the readout bias"), "the readout bias"))

    for key, value in sd.items():
        if not np.all(np.isfinite(value)):
            raise ExportError(f"{key} overflows float64 once the inverse temperature and sqrt(d_head) are folded in; "
                              "use a smaller inverse temperature or --hardmax-lambda")
    biggest = max(float(np.max(np.abs(v), initial=0.0)) for v in sd.values())
    if biggest > float(np.finfo(np.float32).max):
        changes.append(f"a weight of magnitude {biggest:.3g} exceeds float32: load this model in float64 only")
    config = {"d_model": D, "d_head": d_head, "n_heads": n_heads, "n_layers": len(blocks), "n_ctx": n,
              "d_vocab": net.d_in, "d_vocab_out": net.d_out, "d_mlp": d_mlp, "act_fn": act,
              "normalization_type": norm_type, "eps": eps,
              "attention_dir": "causal" if causal == {True} else "bidirectional",
              "positional_embedding_type": "standard" if rotary_m is None else "rotary",
              "attn_only": not ffn, "init_weights": False, "model_name": f"expressivity: {net.name}"[:200],
              "original_architecture": "expressivity.Network"}
    if rotary_m is not None:
        config |= {"rotary_dim": rotary_m, "rotary_base": 10000}
    labels = tuple(net.labels) + tuple(f"pos={p}" for p in range(P))
    padded = sum(1 for b in blocks if None in b) if ffn else 0
    cost = {"d_model": D, "network_d": d, "position_dims": P, "biased_heads": len(biased),
            "query_key_dims_per_biased_head": P, "d_head": d_head,
            "blocks": len(blocks), "padded_sublayers": padded, "network_parameters": net.parameter_count(),
            "exported_parameters": int(sum(a.size for a in sd.values()))}
    if P:
        changes.append(f"{len(biased)} head(s) with a position bias: realised exactly by {P} one-hot position "
                       f"dimensions (pos_embed) and {P} extra query/key dimensions per biased head")
    if padded:
        changes.append(f"{padded} zero sublayer(s) inserted so that every block is attention then MLP")
    changes.append(f"sqrt(d_head) = {s:.6g} and the inverse temperature folded into W_Q and b_Q")
    outs = net.output_labels or tuple(f"y[{k}]" for k in range(net.d_out))
    return TLExport(config, sd, labels, tuple(layer_map), d, net.d_in, net.d_out, cost, tuple(changes),
                    tuple(net.input_labels), outs, takes_tokens(net), rotary_m is not None,
                    None if hardmax_lambda is None else float(hardmax_lambda), source or {}, _as_exported(net, plan, n),
                    None if input_bias is None else tuple(float(v) for v in input_bias))


def _as_exported(net: Network, plan: dict, n: int) -> Network:
    """``net`` with every hardmax layer replaced by the softmax layer the export wrote for it."""
    from dataclasses import replace

    from expressivity.network.biases import MatrixBias

    if all(net.layers[k].normalization == "softmax" for k in plan):
        return net
    length = net.max_length or net.length or n
    layers = list(net.layers)
    for k, (dot, bias_mult) in plan.items():
        layer = layers[k]
        if layer.normalization == "softmax":
            continue
        heads = []
        for head in layer.heads:
            bias = None
            if bias_mult != 0 and head.position_bias is not None:
                B = _bias_matrix(head, length)
                bias = MatrixBias(np.where(np.isinf(B), B, B * bias_mult))
            heads.append(replace(head, position_bias=bias))
        layers[k] = replace(layer, heads=tuple(heads), normalization="softmax", inverse_temperature=dot)
    from expressivity.network.lengths import ValidLengths, common_lengths

    max_length = net.max_length if net.max_length or net.length else length
    valid = net.valid_lengths if max_length is None else common_lengths(net.valid_lengths, ValidLengths.range(1, max_length))
    return replace(net, layers=tuple(layers), max_length=max_length, valid_lengths=valid,
                   name=f"{net.name} (hardmax layers as softmax)")


def takes_tokens(net: Network) -> bool:
    """True when the network's inputs are one-hot tokens (trained token models, imported TransformerLens models)."""
    config = net.metadata.get("model_config")
    if isinstance(config, dict) and isinstance(config.get("vocab_size"), int) and config["vocab_size"] > 0:
        return net.embedding is not None
    return net.metadata.get("input") == "tokens" and net.embedding is not None


README = """# {name}

Exported by expressivity {version} for TransformerLens {tl} (`pip install "transformer-lens=={tl}"`).

```python
import json, torch, safetensors.torch
from transformer_lens.model_bridge import TransformerBridge
from transformer_lens.config import TransformerBridgeConfig

cfg = TransformerBridgeConfig(**json.load(open("{folder}/config.json")))
bridge = TransformerBridge.boot_native(cfg, dtype=torch.float64)  # or torch.float32
bridge.load_state_dict(safetensors.torch.load_file("{folder}/model.safetensors"), strict=True)
X = torch.tensor({example}, dtype=torch.float64)  # an input of the network: (batch, n, d_in), tokens as rows
logits, cache = bridge.run_with_cache(X @ bridge.state_dict()["embed.weight"]{bias})
print(logits)                                  # the network's output: (batch, n, d_out)
print(cache["blocks.0.attn.hook_pattern"])     # attention weights: (batch, head, query, key)
```
{tokens}
The first {d} residual dimensions are the network's own (their labels are in `expressivity.json`);
{extra}. `expressivity.json` also says which network layer became which block and which hooks
show it, what the export changed, and what it cost. Outputs agree with expressivity's reference
evaluator within {tol32:g} (relative, float32) and {tol64:g} (float64); the measured differences
are in `expressivity.json` under `verified`.
"""


def save_transformer_lens(export: TLExport, directory: Path, name: str = "network", folder: str | None = None,
                          example: np.ndarray | None = None) -> list[Path]:
    """Write ``config.json``, ``model.safetensors``, ``expressivity.json`` and ``README.md`` under ``directory``.

    ``folder`` is the name the README's loading snippet uses (default: ``directory``'s name);
    ``example`` an input ``(n, d_in)`` of the network it shows.
    """
    from safetensors.numpy import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / n for n in ("config.json", "model.safetensors", "expressivity.json", "README.md")]
    paths[0].write_text(json.dumps(export.config, indent=1) + "\n")
    save_file({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in export.state_dict.items()}, str(paths[1]))
    paths[2].write_text(json.dumps(export.description(), indent=1, allow_nan=False) + "\n")
    from expressivity import __version__

    P = export.cost["position_dims"]
    extra = (f"dimensions {export.d}..{export.d + P - 1} are one-hot positions that carry the position biases"
             if P else "the export adds no dimensions")
    if example is None:
        example = np.zeros((min(export.config["n_ctx"], 4), export.d_in))
    rows = [[float(v) if float(v) != int(v) else int(v) for v in row] for row in np.asarray(example, dtype=np.float64)]
    tokens = ""
    if export.tokens:
        ids = [int(np.argmax(row)) for row in np.asarray(example)]
        tokens = f"\nA token network: `bridge.run_with_cache(torch.tensor([{ids}]))` gives the same logits.\n"
    bias = " + torch.tensor(json.load(open(\"{}/expressivity.json\"))[\"input_bias\"], dtype=torch.float64)".format(
        folder or directory.name) if export.input_bias else ""
    paths[3].write_text(README.format(name=name, version=__version__, tl=TL_VERSION, folder=folder or directory.name,
                                      example=json.dumps([rows]), bias=bias, tokens=tokens, d=export.d, extra=extra,
                                      tol32=export.tolerance["float32"], tol64=export.tolerance["float64"]))
    return paths


# ---------------------------------------------------------------------------------------------
# running a bridge (TransformerLens needed from here on)
# ---------------------------------------------------------------------------------------------


def _require_tl():
    try:
        import transformer_lens  # noqa: F401
    except ImportError:
        raise ExpressivityError(f"TransformerLens is not installed; {INSTALL}") from None
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge import TransformerBridge

    return TransformerBridge, TransformerBridgeConfig


def _torch_dtype(dtype: str):
    import torch

    if dtype not in ("float32", "float64"):
        raise ExpressivityError(f"TransformerLens dtype must be float32 or float64, got {dtype!r}")
    return torch.float32 if dtype == "float32" else torch.float64


def boot(config: dict, state_dict: dict, dtype: str = "float64"):
    """A ``TransformerBridge`` built by ``boot_native`` from config arguments and a state dict (strict load)."""
    import torch

    TransformerBridge, TransformerBridgeConfig = _require_tl()
    tdt = _torch_dtype(dtype)
    bridge = TransformerBridge.boot_native(TransformerBridgeConfig(**config), dtype=tdt, device="cpu")
    tensors = {k: torch.as_tensor(np.asarray(v), dtype=tdt) if isinstance(v, np.ndarray) else v.to(tdt)
               for k, v in state_dict.items()}
    bridge.load_state_dict(tensors, strict=True)
    bridge.eval()
    return bridge


def load_bridge(directory: Path, dtype: str = "float64"):
    """Load an export folder through TransformerLens's own API (``boot_native`` + ``load_state_dict``)."""
    import safetensors.torch

    directory = Path(directory)
    config, _ = _read_tl_config(directory)
    return boot(config, safetensors.torch.load_file(str(directory / "model.safetensors")), dtype)


def bridge_input(bridge, X: np.ndarray, input_bias=None):
    """The float input embeddings ``X @ embed.weight (+ input_bias)`` for an input ``X`` ``(batch, n, d_in)`` of the network."""
    import torch

    W_E = bridge.state_dict()["embed.weight"]
    out = torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=W_E.dtype) @ W_E
    return out if input_bias is None else out + torch.as_tensor(np.asarray(input_bias), dtype=W_E.dtype)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """``max|a - b| / max|b|`` (absolute when ``b`` is all zero)."""
    scale = float(np.max(np.abs(b), initial=0.0))
    diff = float(np.max(np.abs(a - b), initial=0.0))
    return diff / scale if scale > 0 else diff


def compare(net: Network, export: TLExport, bridge, X: np.ndarray) -> dict:
    """Run ``bridge.run_with_cache`` and our reference pass on ``X``; the largest differences.

    Returns relative output difference (``max|tl - ours| / max|ours|``), the largest absolute
    difference of any attention pattern, and the largest relative residual difference (over the
    network's own dimensions, at every hook that shows a layer's output).
    """
    import torch

    from expressivity.network.reference import attention_weights, forward

    X = np.asarray(X, dtype=np.float64)
    X = X[None] if X.ndim == 2 else X
    ours, residuals = forward(net, X, return_residuals=True)
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(bridge_input(bridge, X, export.input_bias))
    out = {"output_relative": _relative(logits.double().numpy(), ours), "pattern_abs": 0.0, "residual_relative": 0.0}
    first = cache["blocks.0.hook_resid_pre"].double().numpy()[..., :export.d]
    out["residual_relative"] = _relative(first, residuals[0])
    for entry in export.layers:
        k = entry["layer"]
        tl_res = cache[entry["hook_resid"]].double().numpy()[..., :export.d]
        out["residual_relative"] = max(out["residual_relative"], _relative(tl_res, residuals[k + 1]))
        if entry["kind"] == "attention":
            A = attention_weights(net.layers[k], residuals[k])
            tl_A = cache[entry["hook_pattern"]].double().numpy()[:, :entry["heads"]]
            out["pattern_abs"] = max(out["pattern_abs"], float(np.max(np.abs(tl_A - A), initial=0.0)))
    return out


def our_float32(net: Network, X: np.ndarray) -> dict:
    """How far our own float32 evaluator (PyTorch) is from the float64 reference on ``X``, in the
    terms of :func:`compare`: the yardstick for what float32 can do on this network."""
    import torch

    from expressivity.network.reference import attention_weights, forward
    from expressivity.network.torch_eval import to_torch

    ours, residuals = forward(net, X, return_residuals=True)
    module = to_torch(net, "float32")
    out = {"output_relative": 0.0, "pattern_abs": 0.0, "residual_relative": 0.0}
    with torch.no_grad():
        T = torch.as_tensor(X, dtype=torch.float32)
        H = T if module.embedding is None else T @ module.embedding
        if module.embedding_bias is not None:
            H = H + module.embedding_bias
        if module.positional_encoding is not None:
            H = H + module.positional_encoding[: T.shape[1]]
        out["residual_relative"] = _relative(H.double().numpy(), residuals[0])
        for k, (layer, torch_layer) in enumerate(zip(net.layers, module.layers)):
            if layer.kind == "attention":
                A = torch_layer.weights(H).double().numpy()
                out["pattern_abs"] = max(out["pattern_abs"], float(np.max(np.abs(A - attention_weights(layer, residuals[k])))))
            H = torch_layer(H)
            out["residual_relative"] = max(out["residual_relative"], _relative(H.double().numpy(), residuals[k + 1]))
        y = module(T).double().numpy()
    out["output_relative"] = _relative(y, ours)
    return out


METRICS = ("output_relative", "pattern_abs", "residual_relative")


def verify(net: Network, export: TLExport, X: np.ndarray, dtypes=("float32", "float64"),
           folder: Path | None = None) -> dict:
    """Boot the export in each TransformerLens dtype (from ``folder`` through TransformerLens's own
    API when given, else from memory) and :func:`compare` it on ``X`` with the network it computes.

    Per dtype: the differences, the ``tolerance`` and a ``status``: ``"ok"`` (every difference
    within the tolerance), ``"float32 too coarse"`` (float32 outside it, but within ten times what
    our own float32 evaluator does on the same input: the network asks more of float32 than it
    has, e.g. attention scores of 1e5 with gaps of 1/32; ``our_float32`` has those numbers), or
    ``"failed"``. With ``hardmax_lambda``, ``hardmax_vs_softmax`` is how far the softmax copy is
    from the hardmax network on ``X`` (a property of ``lam`` and ``X``, not an export error).
    """
    from expressivity.network.evaluate import evaluate

    target = export.network or net
    X = np.asarray(X, dtype=np.float64)
    X = X[None] if X.ndim == 2 else X
    report = {}
    for dtype in dtypes:
        bridge = boot(export.config, export.state_dict, dtype) if folder is None else load_bridge(folder, dtype)
        with np.errstate(all="ignore"):
            diff = compare(target, export, bridge, X)
        tol = export.tolerance[dtype]
        diff["tolerance"] = tol
        status = "ok" if all(diff[m] <= tol for m in METRICS) else "failed"
        if status == "failed" and dtype == "float32":
            with np.errstate(all="ignore"):
                ours = our_float32(target, X)
            diff["our_float32"] = ours
            diff["our_float32_relative"] = ours["output_relative"]
            if all(diff[m] <= 10 * max(tol, ours[m]) for m in METRICS):
                status = "float32 too coarse"
        diff["status"] = status
        report[dtype] = diff
    if target is not net:
        report["hardmax_vs_softmax"] = _relative(evaluate(target, X, "float64"), evaluate(net, X, "float64"))
    return report


# ---------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------

# TransformerBridgeConfig defaults (4.3.0) for the fields the native model reads; a test checks them.
CONFIG_DEFAULTS = {"n_heads": -1, "d_vocab": -1, "d_vocab_out": -1, "d_mlp": None, "act_fn": "relu",
                   "normalization_type": "LN", "eps": 1e-5, "attention_dir": "causal",
                   "positional_embedding_type": "standard", "attn_only": False, "gated_mlp": False, "final_rms": False,
                   "n_key_value_heads": None, "rotary_dim": None, "rotary_base": 10000, "use_attn_scale": True,
                   "attn_scale": -1.0, "attn_scores_soft_cap": -1.0, "output_logits_soft_cap": -1.0,
                   "parallel_attn_mlp": False, "post_embedding_ln": False, "rope_scaling": None}


def _read_tl_config(directory: Path) -> tuple[dict, dict | None]:
    """``config.json`` (and ``expressivity.json`` when present) of a TransformerLens folder."""
    directory = Path(directory)
    path = directory / "config.json"
    if not path.is_file() or not (directory / "model.safetensors").is_file():
        raise ExpressivityError(f"{directory} is not a TransformerLens folder (config.json and model.safetensors)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ExpressivityError(f"{path} is not valid JSON ({' '.join(str(exc).split())})") from None
    if not isinstance(config, dict):
        raise ExpressivityError(f"{path} is not a TransformerBridgeConfig argument object")
    desc = None
    if (directory / "expressivity.json").is_file():
        try:
            desc = json.loads((directory / "expressivity.json").read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
            raise ExpressivityError(f"{directory}/expressivity.json is not valid JSON ({' '.join(str(exc).split())})") from None
        if not isinstance(desc, dict) or desc.get("format") != FORMAT:
            raise ExpressivityError(f"{directory}/expressivity.json is not in format {FORMAT}; re-export the network")
    return config, desc


def _int(config: dict, key: str, low: int = 1) -> int:
    v = config.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ExpressivityError(f"TransformerLens config field {key} must be an integer >= {low}, got {v!r}")
    return v


def _settings(config: dict) -> dict:
    c = CONFIG_DEFAULTS | {k: v for k, v in config.items() if k in CONFIG_DEFAULTS or k in
                           ("d_model", "d_head", "n_layers", "n_ctx")}
    for key in ("d_model", "d_head", "n_layers", "n_ctx"):
        _int(c, key)
    if c["n_heads"] == -1:
        c["n_heads"] = c["d_model"] // c["d_head"]
    _int(c, "n_heads")
    if c["d_mlp"] is None:
        c["d_mlp"] = 4 * c["d_model"]
    refuse = []
    if c["gated_mlp"]:
        refuse.append("gated_mlp (a product of two projections is not a ReLU/GELU layer)")
    norm = None if c["normalization_type"] is None else str(c["normalization_type"]).upper()
    if norm not in (None, "LN", "LNPRE"):
        refuse.append(f"normalization_type {c['normalization_type']!r} (RMS norms are not layer norms; use None or LN)")
    if c["final_rms"]:
        refuse.append("final_rms")
    act = str(c["act_fn"] or "gelu").lower()
    if act not in ("relu", "gelu"):
        refuse.append(f"act_fn {c['act_fn']!r} (only relu and the exact gelu are network activations)")
    pos = str(c["positional_embedding_type"] or "standard").lower()
    if pos not in ("standard", "rotary"):
        refuse.append(f"positional_embedding_type {pos!r}")
    for cap in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if float(c[cap]) > 0:
            refuse.append(f"{cap} (tanh soft-capping)")
    if c["rope_scaling"]:
        refuse.append("rope_scaling")
    if c["post_embedding_ln"]:
        refuse.append("post_embedding_ln")
    if refuse:
        raise ExpressivityError("the TransformerLens model uses " + "; ".join(refuse) + ", which a Network does not "
                                "have; import a native model with no norm or LayerNorm, ReLU or GELU, standard or "
                                "rotary positions")
    rd = c["rotary_dim"] if c["rotary_dim"] is not None else c["d_head"]
    if pos == "rotary" and rd != c["d_head"]:
        raise ExpressivityError(f"rotary_dim {rd} is not d_head {c['d_head']}; a Network's rotary heads rotate every "
                                "query/key dimension")
    if pos == "rotary" and float(c["rotary_base"]) != 10000:
        raise ExpressivityError(f"rotary_base {c['rotary_base']} is not 10000, the base of a Network's rotary heads")
    scale = (float(c["attn_scale"]) if c["use_attn_scale"] and float(c["attn_scale"]) > 0 else math.sqrt(c["d_head"]))
    return c | {"norm": norm, "act": act, "rotary": pos == "rotary", "scale": scale,
                "kv_heads": c["n_key_value_heads"] or c["n_heads"], "causal": c["attention_dir"] == "causal"}


def network_from_config(config: dict, state_dict: dict, desc: dict | None = None) -> Network:
    """A :class:`Network` computing what ``boot_native(TransformerBridgeConfig(**config))`` with
    ``state_dict`` (bridge names, or classic ``HookedTransformer`` names) computes on one-hot token inputs.

    ``desc`` (an export's ``expressivity.json``) restores residual labels and output size.
    """
    c = _settings(config)
    sd = {k: np.asarray(v.detach().double().cpu().numpy() if hasattr(v, "detach") else v, dtype=np.float64)
          for k, v in state_dict.items()}
    if any(".W_Q" in k or k.endswith(".W_E") for k in sd):
        sd = _convert_classic(config, state_dict)
    D, H, dh, kvh = c["d_model"], c["n_heads"], c["d_head"], c["kv_heads"]
    if H % kvh:
        raise ExpressivityError(f"n_heads {H} is not a multiple of n_key_value_heads {kvh}")

    def get(key, shape):
        if key not in sd:
            raise ExpressivityError(f"the state dict lacks {key!r}; it does not match its config")
        a = sd[key]
        if a.shape != shape:
            raise ExpressivityError(f"{key!r} has shape {a.shape}, the config implies {shape}")
        if not np.all(np.isfinite(a)):
            raise ExpressivityError(f"{key!r} has a non-finite entry")
        return a

    def norm(prefix):
        if c["norm"] is None:
            return None
        if c["norm"] == "LNPRE":
            return LayerNorm(np.ones(D), np.zeros(D), float(c["eps"]))
        return LayerNorm(get(prefix + ".weight", (D,)), get(prefix + ".bias", (D,)), float(c["eps"]))

    perm = np.arange(dh)
    if c["rotary"]:   # TransformerLens pairs (2k, 2k + 1); ours (k, k + dh/2)
        perm = np.concatenate([np.arange(0, dh, 2), np.arange(1, dh, 2)])
    layers = []
    act = ReLU() if c["act"] == "relu" else GELU()
    for b in range(c["n_layers"]):
        pre = f"blocks.{b}."
        Wq, bq = get(pre + "attn.q.weight", (H * dh, D)), get(pre + "attn.q.bias", (H * dh,))
        Wk = get(pre + "attn.k.weight", (kvh * dh, D))
        if np.any(get(pre + "attn.k.bias", (kvh * dh,))) and c["rotary"]:
            raise ExpressivityError(f"block {b} has a key bias in a rotary model: the rotated bias changes the scores, and "
                                    "a Network head has no key bias (set attn.k.bias to zero)")
        # without rotary, b_K adds a per-query constant to the scores, which softmax ignores
        Wv, bv = get(pre + "attn.v.weight", (kvh * dh, D)), get(pre + "attn.v.bias", (kvh * dh,))
        Wo, bo = get(pre + "attn.o.weight", (D, H * dh)), get(pre + "attn.o.bias", (D,))
        heads, const = [], bo.copy()
        for h in range(H):
            g = h // (H // kvh)
            rows, kv = slice(h * dh, (h + 1) * dh), slice(g * dh, (g + 1) * dh)
            W_O = Wo[:, rows].T
            const += bv[kv] @ W_O          # pattern rows sum to 1: b_V passes through unchanged
            heads.append(Head(W_Q=Wq[rows][perm].T / c["scale"], W_K=Wk[kv][perm].T, W_V=Wv[kv].T, W_O=W_O,
                              b_Q=bq[rows][perm] / c["scale"], rotary=c["rotary"], name=f"head {h}"))
        layers.append(AttentionLayer(tuple(heads), "softmax", 1, c["causal"], f"block {b} attn", norm=norm(pre + "ln1")))
        if np.any(const):
            layers.append(FeedForwardLayer(np.zeros((D, 0)), np.zeros(0), np.zeros((0, D)), const,
                                           name=f"block {b} attn output bias (b_O + sum_h b_V W_O)"))
        if not c["attn_only"]:
            M = c["d_mlp"]
            layers.append(FeedForwardLayer(get(pre + "mlp.in.weight", (M, D)).T, get(pre + "mlp.in.bias", (M,)),
                                           get(pre + "mlp.out.weight", (D, M)).T, get(pre + "mlp.out.bias", (D,)),
                                           activation=act, name=f"block {b} mlp", norm=norm(pre + "ln2")))
    V = get("embed.weight", (_int(c, "d_vocab"), D))
    V_out = c["d_vocab_out"] if c["d_vocab_out"] > 0 else c["d_vocab"]
    pos = None if c["rotary"] else get("pos_embed.weight", (c["n_ctx"], D))
    tokens = not desc or bool(desc.get("tokens"))
    ins = _labels(desc, "input_labels", V.shape[0]) or tuple(f"token {k}" for k in range(V.shape[0]))
    outs = _labels(desc, "output_labels", V_out) or tuple(f"logit[{k}]" for k in range(V_out))
    name = str(config.get("model_name") or "TransformerLens model").removeprefix("expressivity: ")
    return Network(tuple(layers), _labels(desc, "labels", D) or tuple(f"resid[{k}]" for k in range(D)),
                   positional_encoding=pos, readout=get("unembed.weight", (V_out, D)).T, output_labels=outs,
                   name=name, metadata={"source": "transformer-lens", "input": "tokens" if tokens else "floats",
                                        "transformer_lens_config": jsonable({k: v for k, v in config.items()
                                                                             if k != "dtype"})},
                   embedding=V, input_labels=ins, readout_bias=get("unembed.bias", (V_out,)) if "unembed.bias" in sd else None,
                   final_norm=norm("ln_final"), max_length=c["n_ctx"])


def _labels(desc: dict | None, key: str, size: int) -> tuple[str, ...] | None:
    labels = (desc or {}).get(key)
    if isinstance(labels, list) and len(labels) == size and all(isinstance(x, str) for x in labels):
        return tuple(labels)
    return None


def _convert_classic(config: dict, state_dict: dict) -> dict:
    """Classic ``HookedTransformer`` names through TransformerLens's own ``convert_tl_checkpoint``."""
    import torch

    _require_tl()
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.utilities.tl_checkpoint_conversion import convert_tl_checkpoint

    tensors = {k: torch.as_tensor(np.asarray(v)) if not hasattr(v, "detach") else v for k, v in state_dict.items()}
    try:
        converted = convert_tl_checkpoint(tensors, TransformerBridgeConfig(**config))
    except ValueError as exc:
        raise ExpressivityError(f"convert_tl_checkpoint refused the checkpoint: {' '.join(str(exc).split())}") from None
    return {k: v.double().numpy() for k, v in converted.items()}


def from_transformer_lens(bridge) -> Network:
    """The :class:`Network` of a live ``TransformerBridge`` built by ``boot_native``."""
    cfg = bridge.cfg
    if getattr(cfg, "architecture", None) not in (None, "TransformerLensNative"):
        raise ExpressivityError(f"only native TransformerLens models import; this one is {cfg.architecture!r}")
    config = {k: v for k, v in cfg.to_dict().items() if k in CONFIG_DEFAULTS or k in ("d_model", "d_head", "n_layers",
                                                                                       "n_ctx", "model_name")}
    config["rope_scaling"] = getattr(cfg, "rope_scaling", None)
    return network_from_config(config, bridge.state_dict())


def load_transformer_lens(directory: Path) -> Network:
    """The :class:`Network` of a TransformerLens folder (``config.json`` + ``model.safetensors``); no TransformerLens needed
    unless the weights use classic ``HookedTransformer`` names."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    directory = Path(directory)
    config, desc = _read_tl_config(directory)
    try:
        tensors = load_file(str(directory / "model.safetensors"))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ExpressivityError(f"{directory}/model.safetensors is not a readable safetensors file "
                                f"({' '.join(str(exc).split())})") from None
    try:
        net = network_from_config(config, tensors, desc)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ExpressivityError):
            raise
        raise ExpressivityError(f"{directory} holds an inconsistent model ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())})") from None
    return net
