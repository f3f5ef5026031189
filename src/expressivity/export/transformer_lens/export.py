"""Network -> TransformerLens native model: config arguments, state dict, and the map back (:class:`TLExport`).

The contract and how the semantics are matched are in :mod:`expressivity.export.transformer_lens`.
:func:`to_transformer_lens` reads as its stages: plan (refuse what TransformerLens cannot
express, size the model), write the state dict block by block, state the config and the cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network.inputs import takes_tokens
from expressivity.network.layers import Head, rule_for
from expressivity.network.network import Network
from expressivity.records import jsonable
from expressivity.verify.size import counted

FORMAT = "expressivity.transformer-lens/2"
# 2 always records the files' SHA-256 (a /2 description without them was edited); 1 may predate them
READABLE = ("expressivity.transformer-lens/1", FORMAT)
TL_VERSION = "4.3.0"          # the TransformerLens release these conversions were checked against
DEFAULT_N_CTX = 64            # positions of a network that fixes none
MAX_N_CTX = 4096
MASKED_SCORE = -1e9           # a -inf bias entry: exp(MASKED_SCORE - max) is exactly 0 in float32 and float64
# TransformerLens takes no -inf: the mask is a finite score, which masks only while the head's own scores stay
# far above it (the export command's verification checks it on its inputs); said once per export
MASK_NOTE = (f"-inf position-bias entries are exported as the score {MASKED_SCORE:g}, which masks only while every "
             f"attention score stays above about {MASKED_SCORE / 10:g}; a head whose scores reach that is not "
             "represented (check the export, as the export command does)")
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}
ROTARY_FLOAT64_TOLERANCE = 1e-5   # TransformerLens's rotary tables are float32 even in a float64 model
_ACT_NAMES = {"relu": "relu", "gelu": "gelu"}


class ExportError(ExpressivityError):
    """A network that TransformerLens cannot express as it is (the message says why and the fix)."""


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
    # the digest of config and state dict as to_transformer_lens wrote them: ``network``'s claim is about those
    made_as: str | None = field(default=None, compare=False, repr=False)

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
                                  + ("; or bridge(token_ids)" if self.tokens else "")} | self._claim())

    def _claim(self) -> dict:
        """The exported network's contract (valid lengths, input domain, or why it carries no claim), so a
        folder saved from Python is read back with it as one the ``export`` command wrote."""
        net = self.network
        if net is None:
            return {}
        no_claim = net.no_claim
        if no_claim is None and self.made_as != export_digest(self.config, self.state_dict):
            # a weight doubled in place (or a config edited) after the export was saved with the network's claim,
            # and run answered within the claim with every output doubled (a fresh audit, 2026-11-29)
            no_claim = ("its config or state dict is not the one to_transformer_lens wrote for the network (changed "
                        "since), so the network's claim is not about it")
        valid = net.valid_lengths
        if valid is not None and isinstance(self.config.get("n_ctx"), int):
            # the lengths TransformerLens can run: a shift valid at 1..6 exported at n_ctx 3 from Python wrote a folder
            # that could not be read back ("go beyond max_length 3"), as the export command cuts them (an audit)
            from expressivity.errors import NetworkError
            from expressivity.network.lengths import ValidLengths, common_lengths

            try:
                valid = common_lengths(valid, ValidLengths.range(1, self.config["n_ctx"]))
            except NetworkError:
                valid = None
                no_claim = no_claim or (f"it was exported at n_ctx {self.config['n_ctx']}, below every length the "
                                        f"network is built for ({net.valid_lengths.describe()})")
        # "trained": a trained model's export saved from Python read back as a construction's (a review, 2026-11-29)
        return {"valid_lengths": None if valid is None else valid.to_dict(),
                "input_domain": None if net.input_domain is None else net.input_domain.to_dict(),
                "no_claim": no_claim, "trained": net.trained}


def export_digest(config: dict, state_dict: dict) -> str:
    """SHA-256 of an export's config (as JSON) and state dict (names, shapes and float64 bytes)."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(jsonable(config), sort_keys=True).encode())
    for name in sorted(state_dict):
        array = np.ascontiguousarray(state_dict[name], dtype=np.float64)
        digest.update(f"{name}:{array.shape}:".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


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


def _refuse_mixing(blocks: list[list], k: int, layer) -> None:
    raise ExportError(f"layer {k} ({layer.name or 'mixing'}) mixes tokens by a fixed matrix or convolution, "
                      "which is not a softmax attention pattern; TransformerLens cannot express it "
                      "(export a network of attention and feed-forward layers)")


def _place_attention(blocks: list[list], k: int, layer) -> None:
    blocks.append([k, None])


def _place_feedforward(blocks: list[list], k: int, layer) -> None:
    if blocks and blocks[-1][1] is None:
        blocks[-1][1] = k            # the MLP after this block's attention
    else:
        blocks.append([None, k])     # no attention before it: a block with a zero attention


# layer kind -> where it goes in TransformerLens's "attention then MLP" blocks
_PLACE_IN_BLOCKS = {"attention": _place_attention, "feedforward": _place_feedforward, "mixing": _refuse_mixing}


def _blocks(net: Network) -> list[list]:
    """Group the layers into TransformerLens blocks ``[attention index | None, feed-forward index | None]``."""
    blocks: list[list] = []
    for k, layer in enumerate(net.layers):
        rule_for(_PLACE_IN_BLOCKS, layer, "TransformerLens exporter")(blocks, k, layer)
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


def _constant(layer) -> bool:
    """A feed-forward layer of width 0: it adds its output bias to every token, whatever it reads."""
    return layer.kind == "feedforward" and np.shape(layer.W_1)[1] == 0


def _norm_type(net: Network, blocks: list[list]) -> tuple[str | None, float]:
    """``None`` (no norms anywhere) or ``"LN"`` (every layer and the output, one eps)."""
    # a width-0 feed-forward layer adds its output bias whatever it reads, so its norm does not matter: the layer a
    # TransformerLens import adds for b_O + sum_h b_V W_O has none, and every checkpoint with layer norms and those
    # biases was refused ("layer 0 has a layer norm but layer 1 has none", a fresh audit, 2026-11-29)
    norms = [(f"layer {k}", net.layers[k].norm) for b in blocks for k in b
             if k is not None and not _constant(net.layers[k])]
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


def _attention_layers(net: Network, blocks: list[list]) -> list[tuple[int, object]]:
    """``(index, layer)`` of every attention layer, in order, as :func:`_blocks` placed them."""
    return [(b[0], net.layers[b[0]]) for b in blocks if b[0] is not None]


def _feedforward_layers(net: Network, blocks: list[list]) -> list[tuple[int, object]]:
    """``(index, layer)`` of every feed-forward layer, in order, as :func:`_blocks` placed them."""
    return [(b[1], net.layers[b[1]]) for b in blocks if b[1] is not None]


def _activation(net: Network, blocks: list[list]) -> str:
    acts = {}
    for k, layer in _feedforward_layers(net, blocks):
        if _constant(layer):   # no unit to activate: any activation computes its bias
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


def _attention_plan(net: Network, blocks: list[list], n: int, hardmax_lambda: float | None,
                    margin: tuple[str, float] | None):
    """Per attention layer: its score multiplier for the dot product and for the bias, and the changes made."""
    plan, changes = {}, []
    for k, layer in _attention_layers(net, blocks):
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
                           "exactly as softmax" + ("; TransformerLens runs it in float only, so `run` on the folder "
                           "cannot check an answer against the exact claim and refuses it without --allow-outside: "
                           "run the source with --dtype exact for the exact answer"
                           if net.input_domain is not None and net.input_domain.exact else ""))
            continue
        if hardmax_lambda is None:
            hint = ""
            if margin is not None:
                key, g = margin
                lam_hint = math.log(max(n - 1, 1) / 1e-10) / g if g > 0 else None
                hint = (f"; with the score gap g = {g:.6g} of report.json margins.{key}, lam = {lam_hint:.4g} keeps that "
                        "weight below 1e-10" if lam_hint else "")
            raise ExportError(f"{where} uses hardmax, which TransformerLens (softmax only) cannot express; soften it "
                              "first (circuits: give a finite --scale; yun build --out saves the softened network; rasp compile "
                              "--attention softmax; wang-e build --memory adaptive or nested --beta B; the dp-free memories have no "
                              "softmax form), or "
                              "export with --hardmax-lambda LAM: each hardmax layer becomes softmax of LAM times its "
                              f"scores, and the weight off the arg-max is then at most (n-1)*exp(-LAM*g) per query, g "
                              f"the smallest score gap{hint}")
        plan[k] = (hardmax_lambda * lam, hardmax_lambda)
        bound = ""
        if margin is not None and margin[1] > 0:
            bound = (f"; with the score gap g = {margin[1]:.6g} (report.json margins.{margin[0]}) that is at most "
                     f"{off_argmax_bound(n, hardmax_lambda, margin[1]):.3g}")
        changes.append(f"{where}: hardmax exported as softmax of {hardmax_lambda:g} x its scores; the weight off the "
                       f"arg-max keys is at most (n-1)*exp(-{hardmax_lambda:g}*g) per query, g the smallest score gap"
                       + bound)
    return plan, changes


def constant_key_columns(net: Network, k: int, head: Head) -> list[int]:
    """The query/key columns ``c`` of ``head`` (in attention layer ``k``) whose key side ``x_j . W_K[:, c]`` is one
    number at every position of every input, proven from the weights: the inputs are one-hot (every embedding
    row, and the zero row where the field is optional, gives the key side one value), every positional row one
    value, and no layer before ``k`` writes to the dimensions the column reads, nor normalises. Such a column adds
    the same to every score of a query, which a softmax ignores: a hardmax exported as softmax leaves it out. The
    RASP compiler's ``+ SNAP`` column (2^20 on ``one`` and BOS, one of which is 1 at every position) is one: kept,
    float32 rounding of the score (ulp(2^20) = 1/8) times ``--hardmax-lambda`` moved the weights of tied keys
    by percents, and the export's check failed at lambda 3 to 10 on ``reverse`` (a fresh audit, 2026-11-29).
    ``[]`` where the network is not of that form (rotary heads, layer norms, inputs that are not one-hot)."""
    from expressivity.network.numbers import to_exact

    domain = net.input_domain
    fields = [] if domain is None else list(domain.fields)
    layers = net.layers[:k + 1]
    if (head.rotary or len(fields) != 1 or fields[0].kind != "one-hot" or any(layer.norm is not None for layer in layers)
            or any(layer.kind not in ("attention", "feedforward", "mixing") for layer in layers)):
        return []
    rows = [net.input_labels.index(dim) for dim in fields[0].dims]
    embedding = np.eye(net.d, dtype=np.int64) if net.embedding is None else np.asarray(net.embedding)
    W_K = np.asarray(head.W_K)
    out = []
    for c in range(head.size):
        reads = np.flatnonzero(W_K[:, c] != 0)
        if not len(reads) or any(_writes(layer, reads) for layer in net.layers[:k]):
            continue
        w = to_exact(W_K[reads, c])   # exactly: only the columns the key reads are converted
        sides = {sum(row * w) for row in to_exact(embedding[rows][:, reads])} | ({0} if fields[0].optional else set())
        if net.positional_encoding is not None:
            sides = {a + b for a in sides
                     for b in {sum(row * w) for row in to_exact(np.asarray(net.positional_encoding)[:, reads])}}
        if len(sides) == 1:
            out.append(c)
    return out


def _writes(layer, dims) -> bool:
    """Whether ``layer`` can change the residual stream's dimensions ``dims``."""
    if layer.kind == "feedforward":
        return bool(np.any(np.asarray(layer.W_2)[:, dims] != 0)
                    or layer.b_2 is not None and np.any(np.asarray(layer.b_2)[dims] != 0))
    return any(np.any(np.asarray(h.W_O)[:, dims] != 0) for h in layer.heads)


def off_argmax_bound(n: int, hardmax_lambda: float, gap: float) -> float:
    """``(n-1) exp(-lam g)``: the attention weight a softmax of ``lam`` times the scores puts off the arg-max keys of
    a query among ``n`` whose scores are ``gap`` apart or more (stated by an export, measured by the command)."""
    return max(n - 1, 0) * math.exp(-hardmax_lambda * gap)


def _rotary_width(net: Network, blocks: list[list]) -> int | None:
    """The one query width of the rotary heads, or ``None`` when no head is rotary."""
    widths, plain = {}, None
    for k, layer in _attention_layers(net, blocks):
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


@dataclass
class _Plan:
    """What the export of one network looks like before any weight is written.

    ``n`` positions; ``blocks`` ``[attention index | None, feed-forward index | None]``;
    ``attention`` layer index -> ``(dot product multiplier, bias multiplier)``; ``biased`` the
    ``(layer, head)`` pairs whose position bias is carried by ``P`` one-hot position dimensions;
    ``D = d + P`` the residual width; ``changes`` what the export changes, in words.
    """

    n: int
    blocks: list[list]
    norm_type: str | None
    eps: float
    act: str
    attention: dict
    changes: list[str]
    causal: bool
    rotary_m: int | None
    biased: set
    d: int
    P: int
    n_heads: int
    d_head: int
    has_mlp: bool
    d_mlp: int
    dropped: dict = field(default_factory=dict)   # (layer, head) -> columns left out (:func:`constant_key_columns`)

    @property
    def D(self) -> int:
        return self.d + self.P

    @property
    def scale(self) -> float:
        """``sqrt(d_head)``, which TransformerLens divides scores by and the export folds into ``W_Q``."""
        return math.sqrt(self.d_head)


MAX_EXPORT_PARAMETERS = 25_000_000   # weights of an export: about 3 GB at its peak (below)
EXPORT_BYTES_A_WEIGHT = 128   # the peak of writing and checking one: 2.6 GB for the 21M weights of a 2048-token reverse


def exported_parameters(p: _Plan, d_in: int, d_out: int) -> int:
    """The weights :func:`to_transformer_lens` writes for plan ``p``, counted before any is:
    embedding and unembedding, positions, per block Q, K, V, O (``n_heads x D x d_head`` each) and
    the MLP's two ``D x d_mlp`` matrices (biases and norms are small beside them)."""
    blocks = len(p.blocks)
    attention = 4 * p.n_heads * p.D * p.d_head
    mlp = 2 * p.D * p.d_mlp if p.has_mlp else 0
    return (d_in + d_out) * p.D + p.n * p.D + blocks * (attention + mlp)


def _check_size(p: _Plan, net: Network) -> None:
    """Refuse, before any weight is written, an export above :data:`MAX_EXPORT_PARAMETERS` (a
    4096-token reverse with its position bias asked for minutes and all memory: a fresh audit,
    2026-11-28): a position bias costs ``n_ctx`` residual dimensions and as many query/key ones."""
    count = exported_parameters(p, net.d_in, net.d_out)
    if count > MAX_EXPORT_PARAMETERS:
        raise ExportError(f"the TransformerLens model would have about {count:,} weights (d_model {p.D:,}, d_head "
                          f"{p.d_head:,}, {p.n_heads} heads, {len(p.blocks)} blocks, n_ctx {p.n:,}; about "
                          f"{count * EXPORT_BYTES_A_WEIGHT / 2**30:.3g} GiB at the export's peak), above the budget of "
                          f"{MAX_EXPORT_PARAMETERS:,}; "
                          "export a shorter network, or give a smaller --n-ctx where the network takes several "
                          "lengths (each position of a position bias costs a residual dimension)")


def _check_hardmax_lambda(hardmax_lambda) -> None:
    if hardmax_lambda is not None and not (isinstance(hardmax_lambda, (int, float)) and not isinstance(hardmax_lambda, bool)
                                           and math.isfinite(hardmax_lambda) and hardmax_lambda > 0):
        raise ExportError(f"hardmax_lambda must be a finite number > 0, got {hardmax_lambda!r}")


def _biased_heads(net: Network, plan: dict, n: int) -> set[tuple[int, int]]:
    """``(layer, head)`` of every exported head whose position bias changes its softmax."""
    return {(k, h) for k in plan for h, head in enumerate(net.layers[k].heads)
            if plan[k][1] != 0 and _bias_matters(head, n, net.layers[k].causal)}


def _refuse_position_conflicts(net: Network, biased: set, norm_type: str | None, rotary_m: int | None) -> None:
    """Position biases, layer norms, rotary heads and positional encodings TransformerLens cannot have together."""
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


def _causal(net: Network, blocks: list[list]) -> bool:
    """Whether the attention is causal (TransformerLens has one ``attention_dir`` for all layers)."""
    causal = {net.layers[b[0]].causal for b in blocks if b[0] is not None}
    if len(causal) > 1:
        raise ExportError("some attention layers are causal and others not; TransformerLens has one attention_dir")
    return causal == {True}


def _plan(net: Network, n_ctx: int | None, hardmax_lambda: float | None, margin) -> _Plan:
    """Check that TransformerLens can express ``net`` and size the export (``ExportError`` naming the fix if not)."""
    _check_hardmax_lambda(hardmax_lambda)
    n = _n_ctx(net, n_ctx)
    blocks = _blocks(net)
    if not blocks:
        raise ExportError("the network has no layers; TransformerLens needs at least one block")
    norm_type, eps = _norm_type(net, blocks)
    act = _activation(net, blocks)
    plan, changes = _attention_plan(net, blocks, n, hardmax_lambda, margin)
    if hardmax_lambda is not None and not any(net.layers[k].normalization == "hardmax" and plan[k] != (0.0, 0.0)
                                              for k in plan):
        raise ExportError("hardmax_lambda applies only to hardmax layers whose scores do not tie, and this network has "
                          "none; drop it")
    causal = _causal(net, blocks)
    rotary_m = _rotary_width(net, blocks)
    biased = _biased_heads(net, plan, n)
    _refuse_position_conflicts(net, biased, norm_type, rotary_m)
    P = n if biased else 0
    widths = [max(head.size + (P if (k, h) in biased else 0), head.W_V.shape[1])
              for k in plan for h, head in enumerate(net.layers[k].heads)]
    ffn = [layer for _, layer in _feedforward_layers(net, blocks)]
    dropped = {(k, h): cols for k in plan if net.layers[k].normalization == "hardmax" and plan[k][0] != 0
               for h, head in enumerate(net.layers[k].heads) if (cols := constant_key_columns(net, k, head))}
    if dropped:
        changes.append(f"{counted(sum(map(len, dropped.values())), 'query/key column')} of hardmax heads that add "
                       "the same to every score of a query (proven from the weights) left out: a softmax ignores them, "
                       "and in float32 their rounding, times the hardmax lambda, would move the weights")
    return _Plan(n=n, blocks=blocks, norm_type=norm_type, eps=eps, act=act, attention=plan, changes=changes,
                 causal=causal, rotary_m=rotary_m, biased=biased, d=net.d, P=P,
                 n_heads=max([layer.head_count for _, layer in _attention_layers(net, blocks)], default=1),
                 d_head=max(widths + [rotary_m or 0, 1]), has_mlp=bool(ffn),
                 d_mlp=max([layer.width for layer in ffn] + [1]), dropped=dropped)


def _input_weights(net: Network, p: _Plan) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """``embed.weight`` ``(d_in, D)``, ``pos_embed.weight`` ``(n, D)`` (not in rotary models), and
    the ``input_bias`` ``(D,)`` a rotary model needs for an embedding bias (``None`` otherwise)."""
    d, D, n = p.d, p.D, p.n
    E_in = np.zeros((net.d_in, D))
    E_in[:, :d] = np.eye(d) if net.embedding is None else _finite(_f64(net.embedding, "the embedding"), "the embedding")
    sd = {"embed.weight": E_in}
    bias = lambda: _finite(_f64(net.embedding_bias, "the embedding bias"), "the embedding bias")  # noqa: E731
    if p.rotary_m is None:
        pos = np.zeros((n, D))
        if net.positional_encoding is not None:
            pos[:, :d] = _finite(_f64(net.positional_encoding, "the positional encoding")[:n], "the positional encoding")
        if net.embedding_bias is not None:
            pos[:, :d] += bias()
        if p.P:
            pos[:, d:] = np.eye(n)
        sd["pos_embed.weight"] = pos
        return sd, None
    if net.embedding_bias is None:
        return sd, None
    input_bias = np.zeros(D)
    input_bias[:d] = bias()
    p.changes.append("rotary TransformerLens models have no position embedding to carry the embedding bias: give the "
                     "bridge X @ embed.weight + input_bias (expressivity.json)")
    return sd, input_bias


def _head_weights(p: _Plan, k: int, h: int, head: Head, w: dict[str, np.ndarray]) -> None:
    """Write head ``h`` of attention layer ``k`` into the block's stacked ``q``, ``qb``, ``kw``, ``vw``, ``ow``."""
    dot, bias_mult = p.attention[k]
    d, s, P = p.d, p.scale, p.P
    where = f"layer {k} head {h}"
    r0, m, mv = h * p.d_head, head.size, head.W_V.shape[1]
    WQ, WK = (_finite(_f64(a, where), where) for a in (head.W_Q, head.W_K))
    bQ = _finite(_f64(head.b_Q, where), where)
    cols = np.arange(m)
    if head.rotary:   # ours pairs (k, k + m/2); TransformerLens pairs (2k, 2k + 1)
        cols = np.empty(m, dtype=int)
        cols[0::2], cols[1::2] = np.arange(m // 2), np.arange(m // 2) + m // 2
    if m and dot != 0:
        with np.errstate(over="ignore"):   # an overflow is refused later, by name
            w["q"][r0:r0 + m, :d] = s * dot * WQ[:, cols].T
            w["qb"][r0:r0 + m] = s * dot * bQ[cols]
        w["kw"][r0:r0 + m, :d] = WK[:, cols].T
        for c in p.dropped.get((k, h), []):   # not rotary: cols is the identity
            w["q"][r0 + c], w["qb"][r0 + c], w["kw"][r0 + c] = 0, 0, 0
    if (k, h) in p.biased:
        with np.errstate(over="ignore", invalid="ignore"):
            B = _bias_matrix(head, p.n) * bias_mult
            if np.any(np.isnan(B)) or np.any(B == np.inf):
                raise ExportError(f"{where}: its position bias has a NaN or +inf entry")
            if np.any(B == -np.inf) and MASK_NOTE not in p.changes:
                p.changes.append(MASK_NOTE)
            B = np.where(B == -np.inf, MASKED_SCORE, B)
            w["q"][r0 + m:r0 + m + P, d:] = s * B.T   # q_extra[i] = s * B[i, :]
        w["kw"][r0 + m:r0 + m + P, d:] = np.eye(P)  # k_extra[j] = e_j
    w["vw"][r0:r0 + mv, :d] = _finite(_f64(head.W_V, where), where).T
    w["ow"][:d, r0:r0 + mv] = _finite(_f64(head.W_O, where), where).T


def _attention_weights(net: Network, p: _Plan, b: int, k: int | None) -> tuple[dict[str, np.ndarray], dict | None]:
    """Block ``b``'s attention state dict (zero when ``k`` is ``None``) and its entry in the layer map."""
    pre = f"blocks.{b}."
    rows = p.n_heads * p.d_head
    w = {"q": np.zeros((rows, p.D)), "qb": np.zeros(rows), "kw": np.zeros((rows, p.D)), "vw": np.zeros((rows, p.D)),
         "ow": np.zeros((p.D, rows))}
    entry = None
    if k is not None:
        layer = net.layers[k]
        for h, head in enumerate(layer.heads):
            _head_weights(p, k, h, head, w)
        entry = {"layer": k, "kind": "attention", "name": layer.name, "block": b, "heads": len(layer.heads),
                 "hook_pattern": pre + "attn.hook_pattern",
                 "hook_resid": pre + ("hook_resid_mid" if p.has_mlp else "hook_resid_post")}
    sd = {pre + "attn.q.weight": w["q"], pre + "attn.q.bias": w["qb"], pre + "attn.k.weight": w["kw"],
          pre + "attn.k.bias": np.zeros(rows), pre + "attn.v.weight": w["vw"], pre + "attn.v.bias": np.zeros(rows),
          pre + "attn.o.weight": w["ow"], pre + "attn.o.bias": np.zeros(p.D)}
    return sd, entry


def _mlp_weights(net: Network, p: _Plan, b: int, k: int | None) -> tuple[dict[str, np.ndarray], dict | None]:
    """Block ``b``'s MLP state dict (zero when ``k`` is ``None``) and its entry in the layer map."""
    pre = f"blocks.{b}."
    w_in, b_in, w_out, b_out = np.zeros((p.d_mlp, p.D)), np.zeros(p.d_mlp), np.zeros((p.D, p.d_mlp)), np.zeros(p.D)
    entry = None
    if k is not None:
        layer, where, d = net.layers[k], f"layer {k}", p.d
        r = layer.width
        w_in[:r, :d] = _finite(_f64(layer.W_1, where), where).T
        b_in[:r] = _finite(_f64(layer.b_1, where), where)
        w_out[:d, :r] = _finite(_f64(layer.W_2, where), where).T
        b_out[:d] = _finite(_f64(layer.b_2, where), where)
        entry = {"layer": k, "kind": "feedforward", "name": layer.name, "block": b, "hook_resid": pre + "hook_resid_post"}
    return {pre + "mlp.in.weight": w_in, pre + "mlp.in.bias": b_in, pre + "mlp.out.weight": w_out,
            pre + "mlp.out.bias": b_out}, entry


def _norm_weights(net: Network, p: _Plan, b: int, ka: int | None, kf: int | None) -> dict[str, np.ndarray]:
    """Block ``b``'s ``ln1`` / ``ln2`` gains and biases ``(D,)`` (identity norms for inserted sublayers)."""
    sd = {}
    if p.norm_type is None:
        return sd
    for ln, k in (("ln1", ka), ("ln2", kf)):
        if ln == "ln2" and not p.has_mlp:
            continue
        norm = None if k is None else net.layers[k].norm
        sd[f"blocks.{b}.{ln}.weight"] = np.ones(p.D) if norm is None else _f64(norm.gain, "a layer norm")
        sd[f"blocks.{b}.{ln}.bias"] = np.zeros(p.D) if norm is None else _f64(norm.bias, "a layer norm")
    return sd


def _output_weights(net: Network, p: _Plan) -> dict[str, np.ndarray]:
    """The final norm (with layer norms), ``unembed.weight`` ``(d_out, D)`` and ``unembed.bias`` ``(d_out,)``."""
    sd = {}
    if p.norm_type is not None:
        sd["ln_final.weight"] = _f64(net.final_norm.gain, "the final norm")
        sd["ln_final.bias"] = _f64(net.final_norm.bias, "the final norm")
    U = np.zeros((net.d_out, p.D))
    U[:, :p.d] = np.eye(p.d) if net.readout is None else _finite(_f64(net.readout, "the readout"), "the readout").T
    sd["unembed.weight"] = U
    sd["unembed.bias"] = (np.zeros(net.d_out) if net.readout_bias is None
                          else _finite(_f64(net.readout_bias, "the readout bias"), "the readout bias"))
    return sd


def _state_dict(net: Network, p: _Plan) -> tuple[dict[str, np.ndarray], list[dict], np.ndarray | None]:
    """The bridge's state dict (float64, ``[out, in]``), the layer map, and the rotary ``input_bias``."""
    sd, input_bias = _input_weights(net, p)
    layer_map = []
    for b, (ka, kf) in enumerate(p.blocks):
        attention, entry = _attention_weights(net, p, b, ka)
        sd |= attention
        layer_map += [entry] if entry else []
        if p.has_mlp:
            mlp, entry = _mlp_weights(net, p, b, kf)
            sd |= mlp
            layer_map += [entry] if entry else []
        sd |= _norm_weights(net, p, b, ka, kf)
    sd |= _output_weights(net, p)
    for key, value in sd.items():
        if not np.all(np.isfinite(value)):
            raise ExportError(f"{key} overflows float64 once the inverse temperature and sqrt(d_head) are folded in; "
                              "give a smaller --hardmax-lambda (for a hardmax network) or build the network with a "
                              "smaller inverse temperature")
    return sd, layer_map, input_bias


def _tl_config(net: Network, p: _Plan) -> dict:
    """The ``TransformerBridgeConfig`` arguments of the export."""
    config = {"d_model": p.D, "d_head": p.d_head, "n_heads": p.n_heads, "n_layers": len(p.blocks), "n_ctx": p.n,
              "d_vocab": net.d_in, "d_vocab_out": net.d_out, "d_mlp": p.d_mlp, "act_fn": p.act,
              "normalization_type": p.norm_type, "eps": p.eps,
              "attention_dir": "causal" if p.causal else "bidirectional",
              "positional_embedding_type": "standard" if p.rotary_m is None else "rotary",
              "attn_only": not p.has_mlp, "init_weights": False, "model_name": f"expressivity: {net.name}"[:200],
              "original_architecture": "expressivity.Network"}
    if p.rotary_m is not None:
        config |= {"rotary_dim": p.rotary_m, "rotary_base": 10000}
    return config


def _cost(net: Network, p: _Plan, sd: dict[str, np.ndarray]) -> dict:
    """What the export cost (dimensions, padding, parameters); also states the costs among ``p.changes``."""
    biggest = max(float(np.max(np.abs(v), initial=0.0)) for v in sd.values())
    if biggest > float(np.finfo(np.float32).max):
        p.changes.append(f"a weight of magnitude {biggest:.3g} exceeds float32: load this model in float64 only")
    padded = sum(1 for b in p.blocks if None in b) if p.has_mlp else 0
    if p.P:
        p.changes.append(f"{len(p.biased)} head(s) with a position bias: realised exactly by {p.P} one-hot position "
                         f"dimensions (pos_embed) and {p.P} extra query/key dimensions per biased head")
    if padded:
        p.changes.append(f"{padded} zero sublayer(s) inserted so that every block is attention then MLP")
    p.changes.append(f"sqrt(d_head) = {p.scale:.6g} and the inverse temperature folded into W_Q and b_Q")
    return {"d_model": p.D, "network_d": p.d, "position_dims": p.P, "biased_heads": len(p.biased),
            "query_key_dims_per_biased_head": p.P, "d_head": p.d_head,
            "blocks": len(p.blocks), "padded_sublayers": padded, "network_parameters": net.parameter_count(),
            "exported_parameters": int(sum(a.size for a in sd.values()))}


def to_transformer_lens(net: Network, *, n_ctx: int | None = None, hardmax_lambda: float | None = None,
                        margin: tuple[str, float] | None = None, source: dict | None = None) -> TLExport:
    """``net`` as a TransformerLens native model (see :mod:`expressivity.export.transformer_lens` for the contract).

    Args:
        n_ctx: positions of the TransformerLens model (default: the network's length, else
            :data:`DEFAULT_N_CTX`); a position bias costs ``n_ctx`` residual dimensions.
        hardmax_lambda: export hardmax layers as softmax of this multiple of their scores.
        margin: ``(name, g)``, a score gap the construction guarantees, to state the hardmax bound.
        source: facts about where the network came from, kept in ``expressivity.json``.

    Raises :class:`ExportError` naming the first part TransformerLens cannot express and the fix.
    """
    if not isinstance(net, Network):
        raise ExportError(f"to_transformer_lens exports a Network, got {type(net).__name__}; build or load one first")
    p = _plan(net, n_ctx, hardmax_lambda, margin)
    _check_size(p, net)
    sd, layer_map, input_bias = _state_dict(net, p)
    cost = _cost(net, p, sd)
    labels = tuple(net.labels) + tuple(f"pos={q}" for q in range(p.P))
    outs = net.output_labels or tuple(f"y[{k}]" for k in range(net.d_out))
    config = _tl_config(net, p)
    return TLExport(config, sd, labels, tuple(layer_map), p.d, net.d_in, net.d_out, cost, tuple(p.changes),
                    tuple(net.input_labels), outs, takes_tokens(net), p.rotary_m is not None,
                    None if hardmax_lambda is None else float(hardmax_lambda), source or {},
                    _with_claim(_as_exported(net, p.attention, p.n), net, hardmax_lambda),
                    None if input_bias is None else tuple(float(v) for v in input_bias), export_digest(config, sd))


def _with_claim(exported: Network, net: Network, hardmax_lambda) -> Network:
    """``exported`` marked as carrying no claim (:attr:`Network.no_claim`) where its hardmax layers became
    softmax of ``hardmax_lambda`` times their scores: it approximates the construction with no proven bound."""
    if exported is net or hardmax_lambda is None:   # without a lambda every layer was written exactly (uniform)
        return exported
    reason = (f"its hardmax layers were exported as softmax of {hardmax_lambda:g} x their scores, which "
              "approximates the construction's exact claim with no proven bound (export without --hardmax-lambda "
              "to keep the claim)")
    return replace(exported, metadata={**exported.metadata, "no_claim": reason})


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
    # the claim carries over where the softmax layers equal the hardmax ones (no lambda); with a lambda
    # _with_claim marks the copy as carrying none
    return replace(net, layers=tuple(layers), max_length=max_length, valid_lengths=valid, claimed_weights=None,
                   name=f"{net.name} (hardmax layers as softmax)")
