"""The one network representation: an ordered list of residual layers with explicit weights."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields, is_dataclass, replace
from fractions import Fraction

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.equality import equal_by_value
from expressivity.network.domain import ARITHMETIC_REASONS, InputDomain, refusal as domain_refusal
from expressivity.network.labels import summarise_labels
from expressivity.network.layers import LAYERS, Layer, LayerNorm, layer_from_dict
from expressivity.network.lengths import ValidLengths, common_lengths, refusal
from expressivity.network.numbers import as_weight
from expressivity.network.serial import ArrayStore

# metadata about the input's layout (inspect.run reads them): a composition takes the first network's
INPUT_METADATA = ("input", "input_dims", "input_dims_optional")


# What :meth:`Network.parameter_count` counts, in words, for pages and tables that print it.
PARAMETERS_COUNTED = ("stored weight entries of the layers, embedding, positional encoding and readout, "
                      "zeros included")


@dataclass(frozen=True)
class Network:
    """An explicitly weighted Transformer (tokens as rows).

    ``forward(X) = final_norm((g_L o ... o g_1)(X @ embedding + embedding_bias + E[:n])) @ readout
    + readout_bias``, each ``g`` a residual :class:`AttentionLayer`, :class:`FeedForwardLayer` or
    :class:`MixingLayer`; every optional part is the identity (or zero) when absent.

    Attributes:
        layers: the residual layers, applied in order.
        labels: one human name per residual dimension (``len(labels) == d``).
        positional_encoding: optional ``(rows, d)`` array added to the embedded input.
        readout: optional ``(d, d_out)`` matrix applied at the end (identity if ``None``).
        output_labels: names of the readout's output dimensions.
        name: what the network computes, for printing.
        metadata: free-form facts a construction wants to record (constants, margins).
        embedding: optional ``(d_in, d)`` input map (token models take one-hot inputs, see
            :func:`expressivity.network.inputs.one_hot`); ``embedding_bias``: optional ``(d,)``.
        input_labels: names of the ``d_in`` input dimensions (default: ``labels`` when there is
            no embedding, else ``in[k]``).
        readout_bias: optional ``(d_out,)`` added after the readout.
        final_norm: optional :class:`LayerNorm` applied before the readout.
        max_length: ``None``: a positional encoding, matrix bias or mixing matrix fixes the
            input length to its row count. An int: every position-indexed array has
            ``max_length`` rows and an input of ``n <= max_length`` tokens uses the leading rows
            (``[:n]`` / ``[:n, :n]``).
        valid_lengths: the input lengths the network is built and verified for (its contract, see
            :mod:`expressivity.network.lengths`); evaluators refuse other lengths unless called with
            ``allow_length=True``. ``None``: no claim recorded (hand-built networks, networks saved
            before lengths were recorded); only the structural limits above apply.
        input_domain: the inputs the network's claim covers (its contract, see
            :mod:`expressivity.network.domain`); evaluators refuse other inputs unless called with
            ``allow_outside=True``. ``None``: no claim recorded (hand-built networks; folders saved
            before domains were recorded get one derived by the loader where it can).
        claimed_weights: the digest (:func:`weights_digest`) of the weights the claim (``valid_lengths``,
            ``input_domain``) was made for; set on creation, not stored. ``dataclasses.replace`` copies it,
            so a copy with other weights but the old claim carries no claim (:attr:`no_claim` says why,
            also once saved and loaded); give ``claimed_weights=None`` with the new weights, in the copy
            from the original, to claim the same for them.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    layers: tuple[Layer, ...]
    labels: tuple[str, ...]
    positional_encoding: np.ndarray | None = None
    readout: np.ndarray | None = None
    output_labels: tuple[str, ...] | None = None
    name: str = ""
    metadata: dict = field(default_factory=dict, compare=False)
    embedding: np.ndarray | None = None
    embedding_bias: np.ndarray | None = None
    input_labels: tuple[str, ...] | None = None
    readout_bias: np.ndarray | None = None
    final_norm: LayerNorm | None = None
    max_length: int | None = None
    valid_lengths: ValidLengths | None = None
    input_domain: InputDomain | None = None
    claimed_weights: str | None = field(default=None, compare=False, repr=False)
    # set from metadata (model_config, or an export's "trained") and copied by dataclasses.replace with the rest:
    # a copy whose metadata was replaced read as a construction, its outputs "within_claim: true" (an audit, 2026-11-29)
    trained_mark: bool = field(default=False, compare=False, repr=False)
    # metadata["no_claim"] as it stood when the network was made: the metadata dict is its one mutable part, and
    # ``del net.metadata["no_claim"]`` restored the claim, also once saved (left open 2026-11-28, closed 2026-11-29)
    no_claim_mark: str | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "labels", tuple(self.labels))
        if not isinstance(self.name, str):
            raise NetworkError(f"a network's name is text, got {type(self.name).__name__} {self.name!r}")
        if not isinstance(self.metadata, dict):
            raise NetworkError(f"a network's metadata is a dict, got {type(self.metadata).__name__}")
        # its own dict: dataclasses.replace passed the same one on, so a no_claim added to a copy in place withdrew
        # the original's claim too (a review, 2026-11-29)
        object.__setattr__(self, "metadata", dict(self.metadata))
        if "model_config" in self.metadata or self.metadata.get("trained") is True:
            object.__setattr__(self, "trained_mark", True)
        elif not isinstance(self.trained_mark, bool):
            raise NetworkError(f"trained_mark is True or False, got {type(self.trained_mark).__name__}")
        d = len(self.labels)
        if d == 0:
            raise NetworkError("a network needs at least one residual dimension")
        kinds = tuple(LAYERS.values())
        for k, layer in enumerate(self.layers):
            if not isinstance(layer, kinds):
                raise NetworkError(f"layer {k} is {type(layer).__name__}; expected one of {', '.join(c.__name__ for c in kinds)}")
            if layer.d != d:
                raise NetworkError(f"layer {k} ({layer.name or type(layer).__name__}) has width {layer.d}, the network has {d} labelled dimensions")
        self._set_array("positional_encoding", "positional encoding", lambda a: a.ndim == 2 and a.shape[1] == d, f"(rows, {d})")
        self._set_array("embedding", "embedding", lambda a: a.ndim == 2 and a.shape[1] == d, f"(d_in, {d})")
        self._set_array("embedding_bias", "embedding bias", lambda a: a.shape == (d,), f"({d},)")
        self._set_array("readout", "readout", lambda a: a.ndim == 2 and a.shape[0] == d, f"({d}, d_out)")
        self._set_array("readout_bias", "readout bias", lambda a: a.shape == (self.d_out,), f"({self.d_out},)")
        if self.final_norm is not None and (not isinstance(self.final_norm, LayerNorm) or self.final_norm.d != d):
            raise NetworkError(f"final norm must be a LayerNorm of width {d}")
        if self.input_labels is None:
            default = self.labels if self.embedding is None else tuple(f"in[{k}]" for k in range(self.d_in))
            object.__setattr__(self, "input_labels", default)
        object.__setattr__(self, "input_labels", tuple(self.input_labels))
        if len(self.input_labels) != self.d_in:
            raise NetworkError(f"{len(self.input_labels)} input labels for {self.d_in} inputs")
        if self.output_labels is not None:
            object.__setattr__(self, "output_labels", tuple(self.output_labels))
            if len(self.output_labels) != self.d_out:
                raise NetworkError(f"{len(self.output_labels)} output labels for {self.d_out} outputs")
        self._check_lengths()
        self._check_valid_lengths()
        if self.input_domain is not None:
            if not isinstance(self.input_domain, InputDomain):
                raise NetworkError(f"input_domain must be an InputDomain (expressivity.network.domain) or None, got "
                                   f"{type(self.input_domain).__name__}")
            self.input_domain.check_labels(self.input_labels)
        self._check_claimed_weights()
        reason = self.metadata.get("no_claim")
        object.__setattr__(self, "no_claim_mark", reason if isinstance(reason, str) and reason else None)

    def _check_claimed_weights(self) -> None:
        """Tie the claim to these weights: ``dataclasses.replace(net, readout=...)`` kept a construction's
        lengths and domain, so evaluators called a network with other weights "within its claim" (an
        audit, 2026-11-28). A copy whose weights differ from the claimed ones carries no claim."""
        if self.valid_lengths is None and self.input_domain is None:
            object.__setattr__(self, "claimed_weights", None)
            return
        if self.claimed_weights == CLAIMS_NOTHING and "no_claim" not in self.metadata:
            # a copy of a network that claims nothing, its no_claim dropped: a Python re-save of a softmax RASP
            # network checked on samples read "within_claim: true" (an audit, 2026-11-29)
            object.__setattr__(self, "metadata", {**self.metadata, "no_claim": COPIED_NO_CLAIM})
            return
        digest = weights_digest(self)
        changed = self.metadata.get(CHANGED_WEIGHTS)
        if (self.metadata.get("no_claim") == WEIGHTS_CHANGED and self.claimed_weights == digest
                and changed not in (None, digest)):
            # the claimed weights put back, in a copy of the changed network (which recorded the digest it had).
            # Not claimed_weights=None: a network read from its folder comes with None, and a saved copy that had
            # lost its claim got it back so (a review, 2026-11-28); nor a mark added to weights never changed
            # here (an export's recorded no_claim was dropped as soon as it was read: a fresh audit, 2026-11-29)
            object.__setattr__(self, "metadata", {k: v for k, v in self.metadata.items()
                                                  if k not in ("no_claim", CHANGED_WEIGHTS)})
        elif self.claimed_weights is not None and self.claimed_weights != digest:
            if "no_claim" not in self.metadata:
                object.__setattr__(self, "metadata", {**self.metadata, "no_claim": WEIGHTS_CHANGED,
                                                      CHANGED_WEIGHTS: digest})
            return
        if "no_claim" in self.metadata:
            # a network without a claim claims no weights: taking its own digest as the claimed one let any later
            # copy (a rename: dataclasses.replace(net, name=...)) read as "the claimed weights put back" and
            # claim again (a fresh audit, 2026-11-29: a doubled readout exported "within its claim"). Its copies
            # carry the mark, so one whose no_claim is dropped claims nothing either (give claimed_weights=None).
            if self.metadata.get("no_claim") != WEIGHTS_CHANGED:   # those keep the claimed digest to put back
                object.__setattr__(self, "claimed_weights", CLAIMS_NOTHING)
            return
        object.__setattr__(self, "claimed_weights", self.claimed_weights or digest)

    def _set_array(self, attr: str, what: str, ok, expected: str) -> None:
        value = getattr(self, attr)
        if value is None:
            return
        arr = as_weight(value, name=what)
        if not ok(arr):
            raise NetworkError(f"{what} must be {expected}, got {arr.shape}")
        object.__setattr__(self, attr, arr)

    def _check_lengths(self) -> None:
        lengths = self._position_rows()
        if self.max_length is None:
            if len(set(lengths.values())) > 1:
                raise NetworkError(f"network parts are built for different lengths: {sorted(set(lengths.values()))}; "
                                   "rebuild them for one length or set max_length")
            return
        if isinstance(self.max_length, bool) or not isinstance(self.max_length, (int, np.integer)) or self.max_length < 1:
            raise NetworkError(f"max_length must be a positive integer or None, got {self.max_length!r}")
        object.__setattr__(self, "max_length", int(self.max_length))
        for part, rows in lengths.items():
            if rows != self.max_length:
                raise NetworkError(f"{part} has {rows} positions but max_length is {self.max_length}; give it {self.max_length} rows")

    def _check_valid_lengths(self) -> None:
        valid = self.valid_lengths
        if valid is None:
            return
        if not isinstance(valid, ValidLengths):
            raise NetworkError(f"valid_lengths must be a ValidLengths (expressivity.network.lengths) or None, got "
                               f"{type(valid).__name__}")
        if self.length is not None and not (valid.lo == valid.hi == self.length):
            raise NetworkError(f"valid_lengths ({valid.describe()}) disagree with the network's parts, which take "
                               f"exactly {self.length} tokens")
        if self.max_length is not None and not valid.within(self.max_length):
            raise NetworkError(f"valid_lengths ({valid.describe()}) go beyond max_length {self.max_length}")

    def _position_rows(self) -> dict[str, int]:
        """Row count of every position-indexed part, by name."""
        out = {}
        if self.positional_encoding is not None:
            out["positional encoding"] = int(self.positional_encoding.shape[0])
        for k, layer in enumerate(self.layers):
            if layer.length is not None:
                out[f"layer {k} ({layer.name or layer.kind})"] = layer.length
        return out

    # ---- shape facts -------------------------------------------------------------------
    @property
    def d(self) -> int:
        """Residual width."""
        return len(self.labels)

    @property
    def d_in(self) -> int:
        """Input width: the embedding's rows, else ``d``."""
        return self.d if self.embedding is None else int(self.embedding.shape[0])

    @property
    def d_out(self) -> int:
        return self.d if self.readout is None else int(self.readout.shape[1])

    @property
    def length(self) -> int | None:
        """The one sequence length this network is built for, or ``None`` if it takes several."""
        if self.max_length is not None:
            return None
        return next(iter(self._position_rows().values()), None)

    @property
    def lengths(self) -> ValidLengths:
        """The lengths this network takes: its recorded :attr:`valid_lengths`, else what its parts allow."""
        if self.valid_lengths is not None:
            return self.valid_lengths
        return self.structural_lengths()

    def structural_lengths(self) -> ValidLengths:
        """The lengths the weights can be applied to at all (a fixed length, ``1..max_length`` or any)."""
        if self.length is not None:
            return ValidLengths.of([self.length])
        if self.max_length is not None:
            return ValidLengths.range(1, self.max_length)
        return ValidLengths.any()

    def check_input(self, X: np.ndarray, *, allow_length: bool = False, allow_outside: bool = False,
                    arithmetic: str | None = None) -> None:
        """Raise :class:`NetworkError` unless ``X`` is ``(n, d_in)`` or ``(batch, n, d_in)`` of the right sizes.

        ``n`` must also be one of :attr:`valid_lengths` unless ``allow_length``, and ``X`` inside
        :attr:`input_domain` unless ``allow_outside`` (then the result is outside the
        construction's claim; the caller says so, see :meth:`outside_claim`); ``arithmetic``: the one
        it is evaluated in (``exact``, ``float64``, ``float32``), against the domain's
        :attr:`~expressivity.network.domain.InputDomain.arithmetic`.
        """
        if X.ndim not in (2, 3) or X.shape[-1] != self.d_in:
            raise NetworkError(f"input must be (n, {self.d_in}) or (batch, n, {self.d_in}); got shape {X.shape}")
        n = X.shape[-2]
        if n < 1:
            raise NetworkError("input has no tokens")
        if self.length is not None and n != self.length:
            flag = ("; allow_length cannot apply: its position-indexed weights exist for that length only"
                    if allow_length else "")
            raise NetworkError(f"network {self.name!r} is built for length {self.length}, got {n}; rebuild it for "
                               f"length {n}{flag}")
        if self.max_length is not None and n > self.max_length:
            flag = (f"; allow_length cannot apply: its position-indexed weights stop at {self.max_length}"
                    if allow_length else "")
            raise NetworkError(f"network {self.name!r} takes at most {self.max_length} tokens, got {n}; shorten the "
                               f"input{flag}")
        if not allow_length and self.valid_lengths is not None and not self.valid_lengths.contains(n):
            raise NetworkError(refusal(self.name, self.valid_lengths, n))
        if not allow_outside and self.no_claim is not None:
            raise NetworkError(f"network {self.name!r} carries no claim on any input: {self.no_claim}; pass "
                               "allow_outside=True to run it anyway, its outputs marked as outside the claim")
        if not allow_outside and self.input_domain is not None:
            reason = self.input_domain.violation(X, self.input_labels, arithmetic)
            if reason is not None:
                raise NetworkError(domain_refusal(self.name, self.input_domain, reason, self.input_labels))

    @property
    def no_claim(self) -> str | None:
        """Why no input is within this network's claim (``metadata["no_claim"]``: e.g. a hardmax
        construction exported with its hardmax layers as softmax), or ``None``. Its input domain
        then describes the inputs the construction was built for, which this network only approximates."""
        reason = self.metadata.get("no_claim")   # a mark added in place withdraws the claim; one deleted does not restore it
        return reason if isinstance(reason, str) and reason else self.no_claim_mark

    @property
    def trained(self) -> bool:
        """Whether this network holds a trained model's weights (converted by
        :func:`expressivity.nn.convert.to_network`, which records ``model_config``, or read from an export of one,
        ``metadata["trained"]``): its input domain says what it was trained on, not where a proof holds. A
        hand-built network passed through :mod:`expressivity.nn` counts too: its weights are then a model's."""
        return self.trained_mark or "model_config" in self.metadata or self.metadata.get("trained") is True

    def within_claim(self, n: int) -> bool:
        """False when ``n`` tokens are outside the recorded :attr:`valid_lengths` (see :meth:`outside_claim` for inputs)."""
        return self.valid_lengths is None or self.valid_lengths.contains(n)

    def outside_claim(self, X: np.ndarray, arithmetic: str | None = None) -> str | None:
        """Why input ``X`` (``(n, d_in)`` or ``(batch, n, d_in)``) is outside the construction's claim
        (its length is not one of :attr:`valid_lengths`, a value is outside :attr:`input_domain`, or it
        carries no claim at all: :attr:`no_claim`), or ``None`` when it is inside (or no claim is recorded)."""
        if self.no_claim is not None:
            return self.no_claim
        n = int(X.shape[-2])
        if not self.within_claim(n):
            return f"{n} tokens, outside the lengths {self.name!r} is built and verified for ({self.valid_lengths.describe()})"
        if self.input_domain is not None:
            reason = self.input_domain.violation(X, self.input_labels, arithmetic)
            if reason is not None and reason.startswith(ARITHMETIC_REASONS):   # the input is in; the arithmetic not
                return reason
            if reason is not None:
                return (f"{reason}, outside the inputs {self.name!r} is built and verified for "
                        f"({self.input_domain.describe(self.input_labels, facts=False)})")
        return None

    @property
    def uses_position(self) -> bool:
        """True when the network sees token positions (encoding, position bias, rotary, causal mask, mixing)."""
        return self.positional_encoding is not None or any(layer.uses_position for layer in self.layers)

    # ---- size --------------------------------------------------------------------------
    def layer_counts(self) -> dict[str, int]:
        counts = {kind: sum(layer.kind == kind for layer in self.layers) for kind in LAYERS}
        return counts | {"total": len(self.layers)}

    def layer_breakdown(self) -> list[tuple[str, int]]:
        """``(title, count)`` per layer kind, in :data:`~expressivity.network.layers.LAYERS` order:
        every kind present, and those its class lists even when absent (attention, feed-forward)."""
        counts = self.layer_counts()
        return [(cls.title, counts[kind]) for kind, cls in LAYERS.items() if counts[kind] or cls.listed_when_absent]

    def _arrays(self) -> list[np.ndarray]:
        norm = [] if self.final_norm is None else [self.final_norm.gain, self.final_norm.bias]
        own = [self.positional_encoding, self.readout, self.readout_bias, self.embedding, self.embedding_bias]
        return [a for a in own if a is not None] + norm

    def parameter_count(self) -> int:
        """Number of weight entries, counting every stored array (zeros included): :data:`PARAMETERS_COUNTED`."""
        return int(sum(layer.parameter_count() for layer in self.layers) + sum(a.size for a in self._arrays()))

    @property
    def is_exact_weighted(self) -> bool:
        """True if any weight is stored as an exact Python number (object array)."""
        arrays = self._arrays() + [a for layer in self.layers for a in layer.arrays()]
        return any(a.dtype == object for a in arrays)

    # ---- derived networks --------------------------------------------------------------
    def then(self, other: "Network") -> "Network":
        """Compose: run ``self``'s layers, then ``other``'s (only ``other`` may have an output map).

        The composition takes ``self``'s input domain; where ``other`` records a domain of its own
        (a claim on the inputs it receives, ``self``'s outputs, which nothing checks), the
        composition carries no claim (:attr:`no_claim`)."""
        if not isinstance(other, Network):
            raise NetworkError(f"then() composes with a Network, got {type(other).__name__}")
        if self.readout is not None or self.readout_bias is not None or self.final_norm is not None:
            raise NetworkError("cannot compose after a network that has a readout or final norm")
        if other.positional_encoding is not None or other.embedding is not None or other.embedding_bias is not None:
            raise NetworkError("the second network of a composition cannot have an embedding or positional encoding")
        if other.d != self.d:
            raise NetworkError(f"cannot compose widths {self.d} and {other.d}")
        if other.labels != self.labels:
            # equal widths with other names: the second would read the first's dimensions as its own
            k = next(k for k, (a, b) in enumerate(zip(self.labels, other.labels)) if a != b)
            raise NetworkError(f"cannot compose: residual dimension {k} is {self.labels[k]!r} in the first network and "
                               f"{other.labels[k]!r} in the second; relabel one (dataclasses.replace(net, labels=...)) "
                               "if they mean the same")
        if None not in (self.max_length, other.max_length) and self.max_length != other.max_length:
            raise NetworkError(f"cannot compose max_length {self.max_length} with {other.max_length}")
        # the second's facts describe the outputs (answers, decoding); the input layout is the first's
        metadata = {**self.metadata, **other.metadata}
        for key in INPUT_METADATA:
            metadata.pop(key, None)
            if key in self.metadata:
                metadata[key] = self.metadata[key]
        reasons = [n.no_claim for n in (self, other) if n.no_claim is not None]
        if other.input_domain is not None:
            # the second network's claim covers inputs in its domain, and nothing checks that the first's
            # outputs lie there: a construction that composes stages and vouches for them records the
            # composition's domain itself (Yun's compile does)
            reasons.append(f"it composes {other.name or 'a network'!r}, whose claim covers only inputs in its domain "
                           f"({other.input_domain.describe(other.input_labels)}), after {self.name or 'a network'!r}, "
                           "whose outputs are not checked against it")
        metadata.pop("no_claim", None)
        if reasons:
            metadata["no_claim"] = "; ".join(reasons)
        return replace(self, layers=self.layers + other.layers, readout=other.readout, readout_bias=other.readout_bias,
                       final_norm=other.final_norm, output_labels=other.output_labels,
                       max_length=self.max_length or other.max_length,
                       valid_lengths=common_lengths(self.valid_lengths, other.valid_lengths),
                       # the composition reads the first network's input: its domain (the inputs' layout, and
                       # the claim where the second states none) is the first's
                       input_domain=self.input_domain, claimed_weights=None,   # its claim is made here
                       # trained weights in either part make the composition a trained model's (the second's mark
                       # was lost where its metadata had been replaced: a review, 2026-11-29)
                       trained_mark=self.trained_mark or other.trained_mark,
                       name=" o ".join(n for n in (other.name, self.name) if n), metadata=metadata)

    # ---- printing ----------------------------------------------------------------------
    def summary(self, max_layers: int = 40) -> str:
        """A readable multi-line description: dimensions, then one line per layer."""
        counts = self.layer_counts()
        length = f"<={self.max_length}" if self.max_length is not None else (self.length or "any")
        if self.valid_lengths is not None and self.no_claim is None:
            length = f"{length}, valid: {self.valid_lengths.describe()}"
        kinds = ", ".join(f"{count} {title}" for title, count in self.layer_breakdown())
        lines = [
            f"Network {self.name!r}: d={self.d}, length={length}, layers={counts['total']} ({kinds}), "
            f"parameters={self.parameter_count()}",
            "  residual: " + summarise_labels(self.labels, numbered=True),
        ]
        if self.embedding is not None:
            bias = " + bias" if self.embedding_bias is not None else ""
            lines.append(f"  input: {summarise_labels(self.input_labels)} -> embedding {self.embedding.shape}{bias}")
        elif self.embedding_bias is not None:
            lines.append("  input: + bias")
        if self.positional_encoding is not None:
            lines.append(f"  input: + positional encoding {self.positional_encoding.shape}")
        if self.no_claim is not None:   # the lengths and domain below it describe a claim this network lost
            lines.append(f"  claim: none on any input ({self.no_claim})")
        elif self.input_domain is not None and (self.trained or not self.input_domain.is_claim):
            # a trained model's domain is what it takes, not where a proof holds ("claim covers inputs: token ids
            # 0..15" was printed for one, where run says "claim: none", a fresh audit, 2026-11-29)
            why = "a trained model" if self.trained else "no claim recorded"
            lines.append(f"  claim: none ({why}); takes inputs: {self.input_domain.describe(self.input_labels)}")
        elif self.input_domain is not None:
            lines.append(f"  claim covers inputs: {self.input_domain.describe(self.input_labels)}")
        shown = self.layers if len(self.layers) <= max_layers else self.layers[: max_layers // 2]
        for k, layer in enumerate(shown):
            lines.append(f"  [{k}] " + layer.describe(self.labels))
        if len(shown) < len(self.layers):
            lines.append(f"  ... {len(self.layers) - len(shown) - max_layers // 2} layers omitted ...")
            for k in range(len(self.layers) - max_layers // 2, len(self.layers)):
                lines.append(f"  [{k}] " + self.layers[k].describe(self.labels))
        if self.final_norm is not None:
            lines.append("  final layer norm")
        if self.readout is not None or self.readout_bias is not None:
            outs = self.output_labels or tuple(f"y[{k}]" for k in range(self.d_out))
            bias = " + bias" if self.readout_bias is not None else ""
            lines.append(f"  readout{bias} -> {summarise_labels(outs)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    # ---- serialisation -----------------------------------------------------------------
    def to_dict(self, arrays: ArrayStore) -> dict:
        """JSON description; arrays go to ``arrays`` (see :mod:`expressivity.network.serial`)."""
        def put(attr):
            value = getattr(self, attr)
            return None if value is None else arrays.put(attr, value)

        return {
            "name": self.name, "labels": list(self.labels), "input_labels": list(self.input_labels),
            "output_labels": None if self.output_labels is None else list(self.output_labels),
            "max_length": self.max_length,
            "valid_lengths": None if self.valid_lengths is None else self.valid_lengths.to_dict(),
            "input_domain": None if self.input_domain is None else self.input_domain.to_dict(),
            **{attr: put(attr) for attr in ("embedding", "embedding_bias", "positional_encoding", "readout", "readout_bias")},
            "final_norm": None if self.final_norm is None else self.final_norm.to_dict(arrays.scope("final_norm.")),
            "layers": [layer.to_dict(arrays.scope(f"layers.{k}.")) for k, layer in enumerate(self.layers)],
        }

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore, metadata: dict | None = None) -> "Network":
        """Inverse of :meth:`to_dict`; raises :class:`NetworkError` (or ``KeyError``/``TypeError`` on a malformed ``d``)."""
        def get(attr):
            ref = d.get(attr)
            return None if ref is None else arrays.get(ref)

        norm = d.get("final_norm")
        valid = d.get("valid_lengths")
        domain = d.get("input_domain")
        layers = tuple(layer_from_dict(layer, arrays.scope(f"layers.{k}.")) for k, layer in enumerate(d["layers"]))
        return cls(layers, tuple(d["labels"]), get("positional_encoding"), get("readout"),
                   None if d.get("output_labels") is None else tuple(d["output_labels"]), d["name"], metadata or {},
                   get("embedding"), get("embedding_bias"), d.get("input_labels"), get("readout_bias"),
                   None if norm is None else LayerNorm.from_dict(norm, arrays.scope("final_norm.")), d.get("max_length"),
                   None if valid is None else ValidLengths.from_dict(valid),
                   None if domain is None else InputDomain.from_dict(domain))


# metadata key: the digest of the weights whose change cost a network its claim (WEIGHTS_CHANGED)
CHANGED_WEIGHTS = "changed_weights_digest"
WEIGHTS_CHANGED = ("its weights differ from those its claim was made for (a copy by dataclasses.replace keeps the "
                   "claim of the original; give claimed_weights=None to make the same claim for the new weights)")
# claimed_weights of a network that claims nothing (metadata no_claim), which dataclasses.replace copies
CLAIMS_NOTHING = "claims nothing"
COPIED_NO_CLAIM = ("it is a copy (dataclasses.replace) of a network that claims nothing, its no_claim dropped; build the "
                   "network again, or make a claim for it yourself: replace(original, metadata=<without no_claim>, "
                   "claimed_weights=None) in one call")
# input_labels are in: the input domain reads its columns by them, and a copy with two of them swapped kept the
# claim on the other column (a reversal answered 1,2,3,4 "within_claim: true", an audit, 2026-11-29)
_NOT_WEIGHTS = {"name", "labels", "output_labels", "metadata", "valid_lengths", "input_domain", "claimed_weights",
                "trained_mark"}


def weights_digest(net: Network) -> str:
    """SHA-256 of everything that computes ``net``'s function (weights, their dtypes, activations,
    temperatures, lengths) and of the input labels in their order, by which the input domain reads its columns;
    names, residual and output labels, metadata and the claim itself are left out."""
    h = hashlib.sha256()

    def feed(value) -> None:
        if isinstance(value, np.ndarray):
            h.update(f"array {value.dtype.str} {value.shape};".encode())
            if value.dtype == object:   # ints in hex: Python will not write one past 4,300 decimal digits
                for v in value.flat:
                    text = (f"{v:x}" if isinstance(v, int) else f"{v.numerator:x}/{v.denominator:x}"
                            if isinstance(v, Fraction) else repr(v))
                    h.update(f"{type(v).__name__}:{text};".encode())
            else:
                h.update(np.ascontiguousarray(value).tobytes())
        elif is_dataclass(value) and not isinstance(value, type):
            h.update(f"{type(value).__name__}(".encode())
            for f in fields(value):
                if f.name not in _NOT_WEIGHTS:
                    h.update(f"{f.name}=".encode())
                    feed(getattr(value, f.name))
            h.update(b")")
        elif isinstance(value, (tuple, list)):
            h.update(f"[{len(value)}".encode())
            for v in value:
                feed(v)
            h.update(b"]")
        else:
            h.update(f"{type(value).__name__}:{value!r};".encode())

    feed(net)
    return h.hexdigest()
