"""tracr's encoders: a compiled program's ``input_encoder`` (tokens <-> network input ids) and ``output_encoder``
(output columns <-> the output SOp's values).

Input ids: ``0`` is BOS, ``k + 1`` the ``k``-th token of the (sorted) vocabulary, and ``len(vocab) + 1`` the PAD
token when the program was compiled with one (``compiler_pad``). PAD never enters the network: ``apply`` runs the
tokens before the padding and gives the PAD token back at padded positions.
"""

from __future__ import annotations

from typing import Any, Sequence

from expressivity.rasp.language import RASPError


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def find_value(values: Sequence, value) -> int | None:
    """The index of ``value`` in ``values``: an entry of the same type first (``1`` is not ``True``), else an equal
    one (``1 == 1.0``); ``None`` when there is none."""
    same_type = [k for k, v in enumerate(values) if type(v) is type(value) and v == value]
    if same_type:
        return same_type[0]
    try:
        equal = [k for k, v in enumerate(values) if v == value]
    except Exception:   # noqa: BLE001 - a user's token may not compare; then it is not in the list
        return None
    return equal[0] if equal else None


class CategoricalEncoder:
    """Values <-> ids over a fixed list (tracr's ``CategoricalEncoder``): ``encoding_map``, ``encode``, ``decode``."""

    def __init__(self, values: Sequence, *, bos_token: str | None = None, pad_token: str | None = None):
        self.values = list(values)
        self._bos_token, self._pad_token = bos_token, pad_token

    @property
    def encoding_map(self) -> dict:
        """``{value: id}``, tracr's view. A dict keeps one of values that compare equal (``0``, ``False``, ``0.0``,
        which a vocabulary may hold apart): it mapped 0 and False to the id of 0.0 and dropped 1 and True (a fresh
        audit, 2026-11-29), so such a vocabulary is refused here; :meth:`encode` tells them apart."""
        mapping = {v: k for k, v in enumerate(self.values)}
        if len(mapping) < len(self.values):
            clash = [v for v in self.values if self.values[mapping[v]] is not v]
            raise RASPError(f"encoding_map cannot hold {_shown(clash[0])} beside the equal value "
                            f"{_shown(self.values[mapping[clash[0]]])} (a dict keeps one of values that compare "
                            "equal); use encode() and decode(), which tell them apart")
        return mapping

    @property
    def vocab_size(self) -> int:
        return len(self.values)

    @property
    def bos_token(self) -> str | None:
        return self._bos_token

    @property
    def pad_token(self) -> str | None:
        return self._pad_token

    @property
    def bos_encoding(self) -> int | None:
        return None if self._bos_token is None else self.values.index(self._bos_token)

    @property
    def pad_encoding(self) -> int | None:
        return None if self._pad_token is None else self.values.index(self._pad_token)

    def encode(self, inputs: Sequence) -> list[int]:
        ids = []
        for i, value in enumerate(inputs):
            k = find_value(self.values, value)
            if k is None:
                raise RASPError(f"{_shown(value)} at position {i} is not one of the encoder's values "
                                f"{_shown(self.values)}")
            ids.append(k)
        return ids

    def decode(self, encodings: Sequence[int]) -> list:
        out = []
        for i, k in enumerate(encodings):
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.values):
                raise RASPError(f"id {_shown(k)} at position {i} is not in 0..{len(self.values) - 1}")
            out.append(self.values[k])
        return out


class InputEncoder(CategoricalEncoder):
    """A compiled program's tokens -> input ids: checks BOS first, the length and the vocabulary (one-line
    :class:`RASPError` naming the problem)."""

    def __init__(self, vocab: Sequence, bos: str, pad: str | None, max_seq_len: int):
        super().__init__([bos, *vocab] + ([pad] if pad is not None else []), bos_token=bos, pad_token=pad)
        self.vocab, self.max_seq_len = list(vocab), max_seq_len

    def encode(self, inputs: Sequence) -> list[int]:
        tokens = _as_list(inputs)
        if not tokens or not _is(tokens[0], self.bos_token):
            raise RASPError(f"an input starts with the BOS token {self.bos_token!r}, e.g. [{self.bos_token!r}, "
                            f"{', '.join(map(_shown, self.vocab[:2]))}]")
        real = self.unpadded_length(tokens)
        if len(tokens) - 1 > self.max_seq_len:
            raise RASPError(f"the program was compiled for at most {self.max_seq_len} tokens after BOS, got "
                            f"{len(tokens) - 1}; recompile with a larger max_seq_len")
        if real == 1:
            raise RASPError(f"an input has 1..{self.max_seq_len} tokens after BOS (the lengths the network is "
                            "verified for); got none")
        ids = [0]
        for i, t in enumerate(tokens[1:], start=1):
            if i >= real:
                ids.append(self.pad_encoding)
                continue
            k = find_value(self.vocab, t)
            if k is None or _is(t, self.bos_token):
                where = "after the padding began" if self.pad_token is not None and _is(t, self.pad_token) else ""
                raise RASPError(f"token {_shown(t)} at position {i} is not in the vocabulary {_shown(self.vocab)}"
                                + (f" ({where}: PAD only at the end)" if where else ""))
            ids.append(k + 1)
        return ids

    def unpadded_length(self, tokens: Sequence) -> int:
        """How many tokens (BOS included) come before the trailing PAD tokens."""
        n = len(tokens)
        if self.pad_token is not None:
            while n > 1 and _is(tokens[n - 1], self.pad_token):
                n -= 1
        return n


class NumericalEncoder:
    """The identity (tracr's ``NumericalEncoder``): a numerical output is its value."""

    def encode(self, inputs: Sequence) -> list:
        return list(inputs)

    def decode(self, encodings: Sequence) -> list:
        return list(encodings)

    bos_token = pad_token = bos_encoding = pad_encoding = None


def _is(token: Any, special: str | None) -> bool:
    return special is not None and isinstance(token, str) and token == special


def _as_list(inputs) -> list:
    if isinstance(inputs, (str, bytes)):
        raise RASPError(f"an input is a list of tokens with BOS first, got the string {_shown(inputs)}")
    try:
        return list(inputs)
    except TypeError:
        raise RASPError(f"an input is a list of tokens with BOS first, got {type(inputs).__name__}") from None


def special_tokens(vocab, bos, compiler_bos, compiler_pad, mlp_exactness) -> tuple[str, str | None]:
    """``(bos, pad)`` from ``compile``'s arguments, tracr's names (``compiler_bos``, ``compiler_pad``) beside ours
    (``bos``); the PAD token must not be in ``vocab``. ``mlp_exactness`` (tracr's feed-forward sharpness) is
    refused: nothing here needs it."""
    if mlp_exactness is not None:
        raise RASPError("mlp_exactness is tracr's feed-forward sharpness knob; here every block is exact (hardmax) or "
                        "its scale comes from a computed margin (softmax): drop it")
    if compiler_bos is not None:
        if bos not in (None, "BOS", compiler_bos):
            raise RASPError(f"bos={bos!r} and compiler_bos={compiler_bos!r} disagree; give one of them")
        bos = compiler_bos
    bos = "BOS" if bos is None else bos
    if not isinstance(bos, str) or not bos.strip():
        raise RASPError(f"bos must be a non-empty string, got {_shown(bos)}")
    if compiler_pad is not None and (not isinstance(compiler_pad, str) or not compiler_pad.strip()
                                     or compiler_pad == bos):
        raise RASPError(f"compiler_pad must be a non-empty string other than the BOS token, got {_shown(compiler_pad)}")
    if compiler_pad is not None and isinstance(vocab, (set, frozenset, list, tuple)) and \
            any(_is(t, compiler_pad) for t in vocab):
        raise RASPError(f"the PAD token {compiler_pad!r} is also in vocab; choose another compiler_pad")
    return bos, compiler_pad
