"""Save and load a :class:`~expressivity.network.network.Network` as safetensors + JSON.

``DIR/weights.safetensors`` holds every array as float64 (for other tools to load).
``DIR/network.json`` is the network's own description (:meth:`Network.to_dict`: every layer,
bias and activation describes itself) and refers to arrays by tensor name; arrays with exact
entries (ints / Fractions in object arrays) are *also* stored exactly in the JSON, as integers
and ``"p/q"`` strings, and loading prefers that exact copy. Shapes follow the network's row
convention (tokens as rows).

Loading checks what it reads: a missing, corrupt, truncated or inconsistent file (bad JSON, an
unreadable safetensors file, a missing tensor, a wrong shape, an unknown layer type) is an
:class:`ExpressivityError` with a one-line message, never a wrong network.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save

from expressivity.errors import ExpressivityError, NetworkError, require_path, require_type
from expressivity.network.network import Network
from expressivity.network.serial import number_from_json, number_to_json
from expressivity.records import jsonable

FORMAT = "expressivity.network/3"
# format 1 lacks only the fields that version 2 added; 3 always records the weights' SHA-256, so a format-3
# network.json without it was edited (the digest removed). 1 and 2 may predate digests, so they are read, but
# without a claim: a format-3 folder relabelled "/2" with its digest dropped looked just like one (an audit,
# 2026-11-28: a widened length and doubled weights printed within_claim true)
READABLE = ("expressivity.network/1", "expressivity.network/2", FORMAT)
OLDER = ("{file} is in an older format ({format}) that does not record the SHA-256 of itself, so an edit of the "
         "folder cannot be told from the original; build or save the network again with this version")


class SafetensorsArrays:
    """An :class:`~expressivity.network.serial.ArrayStore` over one dict of named float64 tensors."""

    def __init__(self, tensors: dict[str, np.ndarray], prefix: str = "") -> None:
        self.tensors, self.prefix = tensors, prefix

    def put(self, name: str, array: np.ndarray) -> dict:
        array = np.asarray(array)
        key = self.prefix + name
        self.tensors[key] = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
        ref = {"tensor": key, "shape": list(array.shape)}
        if array.dtype == object:
            ref["exact"] = [number_to_json(v) for v in array.flat]
        return ref

    def get(self, ref: dict) -> np.ndarray:
        if not isinstance(ref, dict) or not isinstance(ref.get("tensor"), str) or not isinstance(ref.get("shape"), list):
            raise NetworkError(f"array reference {str(ref)[:60]!r} needs a tensor name and a shape")
        key, shape = ref["tensor"], tuple(ref["shape"])
        tensor = self.tensors.get(key)
        if tensor is None:
            raise NetworkError(f"tensor {key!r} is missing from weights.safetensors")
        if tensor.shape != shape:
            raise NetworkError(f"tensor {key!r} has shape {tensor.shape}, the description says {shape}")
        if "exact" not in ref:
            return tensor
        values = [number_from_json(v) for v in ref["exact"]]
        if len(values) != tensor.size:
            raise NetworkError(f"tensor {key!r}: exact copy has {len(values)} values for shape {shape}")
        exact = np.empty(len(values), dtype=object)
        exact[:] = values
        if not np.array_equal(exact.astype(np.float64), tensor.reshape(-1), equal_nan=True):
            raise NetworkError(f"tensor {key!r} disagrees with its exact copy in network.json")
        return exact.reshape(shape)

    def scope(self, prefix: str) -> "SafetensorsArrays":
        return SafetensorsArrays(self.tensors, self.prefix + prefix)


def save_network(network: Network, directory: Path, *, manifest: bool = True) -> tuple[Path, Path]:
    """Write ``network.json`` and ``weights.safetensors`` under ``directory``; returns both paths.

    With ``manifest`` (the default) also ``manifest.json`` (:mod:`expressivity.manifest`: a folder
    of kind ``"network"`` written by ``save_network``); a folder whose ``manifest.json`` says
    something else (a command's output) is refused, and so is one holding a ``network.json`` or
    ``weights.safetensors`` that no ``save_network`` manifest lists (a file of the user's). Other
    files in the folder are kept. Commands that save a network inside a folder they describe
    themselves pass ``manifest=False``; then nothing already there is replaced.

    The weights, labels, lengths and input domain come back exactly; ``metadata`` (free-form facts)
    is written as JSON (:func:`expressivity.records.jsonable`), so a Fraction there comes back as
    its string ``"p/q"`` and an object as its dictionary.
    """
    from expressivity.manifest import (NETWORK_FILES, NetworkEntry, check_replaceable, file_digests, network_files,
                                      refuse_present, with_own_digest, write_manifest)

    require_type(network, Network, "save_network's network", "build or load one first")
    directory = require_path(directory, "save_network's directory")
    require_type(manifest, bool, "save_network's manifest")
    if directory.exists() and not directory.is_dir():
        raise ExpressivityError(f"{directory} is a file; give save_network a folder to write network.json and "
                                "weights.safetensors into")
    if manifest:
        check_replaceable(directory, "network", ("save_network",), writes=tuple(NETWORK_FILES))
    else:
        refuse_present(directory, NETWORK_FILES, "save_network")
    # everything is made in memory before the folder is touched: a failure leaves nothing half-written
    tensors: dict[str, np.ndarray] = {}
    try:
        desc = {"format": FORMAT, **network.to_dict(SafetensorsArrays(tensors)),
                # a trained model stays one once read back, also a copy whose metadata lost the mark; so does a
                # network without a claim whose metadata lost its no_claim in place
                "metadata": jsonable(_plain({**network.metadata, **({"trained": True} if network.trained else {}),
                                             **({"no_claim": network.no_claim} if network.no_claim else {})})),
                "summary": {"layers": network.layer_counts(), "parameters": network.parameter_count()}}
    except OverflowError:
        raise ExpressivityError(f"network {network.name!r} holds an exact weight beyond the float64 range, which the "
                                "safetensors file cannot carry beside its exact form; rescale it") from None
    if has_control_characters(desc):   # it would be refused when read back: refuse it before writing
        raise ExpressivityError(f"network {network.name!r} has a terminal control character (ESC, BEL, CR, ...) in a "
                                "name, label or metadata string; remove it to save the network")
    weights = save(tensors)
    try:
        # a file edited later carries no claim: the weights' bytes and the description itself are digested
        desc = with_own_digest(desc | {"sha256": file_digests({"weights.safetensors": weights})}, "network.json")
        text = json.dumps(desc, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise ExpressivityError(f"network {network.name!r} cannot be written as JSON ({' '.join(str(exc).split())[:120]}); "
                                "keep its metadata to numbers, strings, lists and dicts") from None
    directory.mkdir(parents=True, exist_ok=True)
    jpath, wpath = directory / "network.json", directory / "weights.safetensors"
    wpath.write_bytes(weights)
    jpath.write_text(text)
    if manifest:
        write_manifest(directory, "network", "save_network", network_files(),
                       [NetworkEntry(".", network.name or "network", "network")])
    return jpath, wpath


def _plain(meta: dict) -> dict:
    out = {}
    for k, v in meta.items():
        if hasattr(v, "__dataclass_fields__"):
            v = {f: getattr(v, f) for f in v.__dataclass_fields__}
        out[k] = v
    return out


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _array_bytes(value) -> int:
    """Bytes of the float64 tensors a description references (``{"tensor": ..., "shape": [...]}``)."""
    if isinstance(value, dict):
        shape = value.get("shape")
        if isinstance(value.get("tensor"), str) and isinstance(shape, list):
            return 8 * math.prod(d for d in shape if isinstance(d, int) and d > 0)
        return sum(_array_bytes(v) for v in value.values())
    if isinstance(value, list):
        return sum(_array_bytes(v) for v in value)
    return 0


def _refuse_oversized(wpath: Path, desc, fix: str) -> None:
    """Refuse a weights file larger than the tensors its description references, before it is read: every tensor
    of the file is loaded, and a 4 KB sparse file holding an unused 1 GiB tensor took 2.1 GB (an audit, 2026-11-28).
    The allowance covers the safetensors header (names, shapes, offsets)."""
    size = wpath.stat().st_size
    needed = _array_bytes(desc)
    with open(wpath, "rb") as f:     # the header's length, its first 8 bytes (about 80 bytes a tensor: a review
        head = f.read(8)             # found 3,200 one-weight layers over an allowance that left it out)
    header = int.from_bytes(head, "little") if len(head) == 8 else 0
    if header > 100_000_000:         # safetensors' own limit on a header
        raise ExpressivityError(f"{wpath} declares a header of {header:,} bytes, beyond safetensors' limit; {fix}")
    if size > 8 + header + 2 * needed + (1 << 20):
        raise ExpressivityError(f"{wpath} holds {size:,} bytes, more than the {needed:,} bytes of the tensors its "
                                f"network.json references and its {header:,}-byte header; {fix}")


# ESC, BEL, backspace, carriage return, DEL and the C1 controls: printed, they retitle or clear a terminal (a name
# holding "\x1b]0;...\x07\x1b[2J" did, from `run`: an audit, 2026-11-28); no writer puts one in a description
_CONTROL = frozenset(map(chr, [*range(0x00, 0x09), 0x0b, 0x0c, *range(0x0d, 0x20), *range(0x7f, 0xa0)]))


def _scalars(value):
    """Every scalar of a JSON value, dict keys included, depth first without recursion (a parsed file may be nested
    nearly as deep as the interpreter's limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            yield item


def has_control_characters(value) -> bool:
    """Whether a JSON value holds, in any string (keys included), a character that drives a terminal."""
    return any(isinstance(v, str) and not _CONTROL.isdisjoint(v) for v in _scalars(value))


def _has_nan(value) -> bool:
    """NaN or an infinity anywhere in a description: its writer never puts either there (exact numbers and
    infinite biases are written as strings), so one was typed in (an audit, 2026-11-28: ``Infinity`` as a
    domain's spread was a traceback)."""
    return any(isinstance(v, float) and not math.isfinite(v) for v in _scalars(value))


EDITED = ("{file} is not the file saved with this network (its SHA-256 differs from the one recorded): the network "
          "was changed after saving, and no check covers it")
UNRECORDED = ("network.json records no SHA-256 of weights.safetensors and of itself (its format always does: the file "
              "was edited), so nothing ties the network to the checks")


def load_network(directory: Path) -> Network:
    """Read a network written by :func:`save_network` (exact arrays come back exact). A tutorial circuit's
    network (``metadata["circuit"]``) is built again from the constants it records and compared weight for
    weight: one whose weights were changed, its digests written again, carries no claim (``no_claim`` says
    why), as ``expressivity run`` reads it (:func:`expressivity.export.folders.rebuilt_circuit_claim`)."""
    from expressivity.export.folders import rebuilt_circuit_claim

    return rebuilt_circuit_claim(read_network(directory))


def read_network(directory: Path) -> Network:
    """:func:`load_network` without building a circuit again (a folder's reader does that with its report)."""
    directory = require_path(directory, "load_network's directory")
    jpath, wpath = directory / "network.json", directory / "weights.safetensors"
    fix = "re-export the network with save_network"
    for path in (jpath, wpath):
        if not path.is_file():
            raise ExpressivityError(f"no saved network in {directory}: {path} is missing")
    try:
        desc = json.loads(jpath.read_text())
        _refuse_oversized(wpath, desc, fix)
        tensors = load_file(str(wpath))
    except ExpressivityError:   # _refuse_oversized's (a ValueError too): not "unreadable"
        raise
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ExpressivityError(f"{jpath} is not valid JSON ({_one_line(exc)}); {fix}") from None
    except (SafetensorError, OSError, ValueError, TypeError) as exc:   # TypeError: a dtype numpy lacks (bfloat16)
        raise ExpressivityError(f"{wpath} is not a readable safetensors file ({_one_line(exc)}); {fix}") from None
    if not isinstance(desc, dict) or desc.get("format") not in READABLE:
        raise ExpressivityError(f"{jpath} is not in format {FORMAT}; {fix}")
    # NaN is never a weight (infinite biases can be masks): refuse it here, naming the file, rather
    # than let it surface later as an output blamed on the input.
    bad = next((k for k, t in tensors.items() if np.isnan(t).any()), None)
    if bad is not None:
        raise ExpressivityError(f"{wpath} holds NaN in tensor {bad!r}; {fix}")
    if _has_nan(desc):
        raise ExpressivityError(f"{jpath} holds a NaN or infinite value; {fix}")
    if has_control_characters(desc):
        raise ExpressivityError(f"{jpath} holds a terminal control character in a name or label; {fix}")
    from expressivity.manifest import edits

    metadata = {} if desc.get("metadata") is None else desc["metadata"]
    if not isinstance(metadata, dict):   # {**metadata} below raised a TypeError traceback (an audit, 2026-11-29)
        raise ExpressivityError(f"{jpath} is malformed: its metadata is a {type(metadata).__name__}, not an object; {fix}")
    changed = edits(directory, desc, (wpath.name,), jpath.name, required=desc.get("format") == FORMAT)
    if desc.get("format") != FORMAT:
        metadata = {**metadata, "no_claim": OLDER.format(file=jpath.name, format=desc.get("format"))}
    elif changed is None:
        metadata = {**metadata, "no_claim": UNRECORDED}
    elif changed:
        metadata = {**metadata, "no_claim": EDITED.format(file=changed[0])}
    try:
        return Network.from_dict(desc, SafetensorsArrays(tensors), metadata=metadata)
    except NetworkError as exc:
        raise ExpressivityError(f"{jpath} describes an invalid network: {_one_line(exc)}; {fix}") from None
    except KeyError as exc:
        raise ExpressivityError(f"{jpath} is malformed: missing field {exc}; {fix}") from None
    except (TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ExpressivityError(f"{jpath} is malformed ({type(exc).__name__}: {_one_line(exc)}); {fix}") from None
