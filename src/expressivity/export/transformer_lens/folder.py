"""A TransformerLens export folder: ``config.json``, ``model.safetensors``, ``expressivity.json``, ``README.md``.

:func:`save_transformer_lens` writes one from a :class:`TLExport`; :func:`read_folder_config`
reads the JSON parts back (the weights are read by whoever boots or imports the model).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.export.transformer_lens.export import FORMAT, READABLE, TL_VERSION, ExportError, TLExport


README = """# {name}

Exported by expressivity {version} for TransformerLens {tl} (`pip install "transformer-lens=={tl}"`).

```python
import json, torch, safetensors.torch
from transformer_lens.model_bridge import TransformerBridge
from transformer_lens.config import TransformerBridgeConfig

cfg = TransformerBridgeConfig(**json.load(open("{folder}/config.json")))
bridge = TransformerBridge.boot_native(cfg, dtype=torch.float64)  # torch.float32 only where the claim below allows
bridge.load_state_dict(safetensors.torch.load_file("{folder}/model.safetensors"), strict=True)
X = torch.tensor({example}, dtype=torch.float64)  # an input of the network: (batch, n, d_in), tokens as rows
logits, cache = bridge.run_with_cache(X @ bridge.state_dict()["embed.weight"]{bias})
print(logits)                                  # the network's output: (batch, n, d_out)
print(cache["blocks.0.attn.hook_pattern"])     # attention weights: (batch, head, query, key)
```
{tokens}
The first {d} residual dimensions are the network's own (their labels are in `expressivity.json`);
{extra}. `expressivity.json` also says which network layer became which block and which hooks
show it, what the export changed, and what it cost. The export's tolerances against expressivity's
reference evaluator are {tol32:g} (relative, float32) and {tol64:g} (float64); whether this model
meets them is measured by `expressivity export` and recorded in `expressivity.json` under
`verified` (a network that asks more of float32 than it has is reported there as "float32 too
coarse": use float64).

{claim}
"""


# The files of a TransformerLens folder and what each is (also the folder's manifest entries).
FOLDER_FILES = {"config.json": "TransformerLens TransformerBridgeConfig arguments (JSON)",
                "model.safetensors": "TransformerLens state dict (safetensors, float64)",
                "expressivity.json": "what the export changed, its cost, verification and valid lengths",
                "README.md": "how to load the folder in TransformerLens"}


def save_transformer_lens(export: TLExport, directory: Path, name: str = "network", folder: str | None = None,
                          example: np.ndarray | None = None, *, manifest: bool = True) -> list[Path]:
    """Write ``config.json``, ``model.safetensors``, ``expressivity.json`` and ``README.md`` under ``directory``.

    ``folder`` is the name the README's loading snippet uses (default: ``directory``'s name);
    ``example`` an input ``(n, d_in)`` of the network it shows. With ``manifest`` (the default)
    also ``manifest.json`` (a ``"transformer-lens"`` folder written by ``save_transformer_lens``;
    one that says something else is refused, and so is a file of these names that no such
    manifest lists: a user's); ``export`` passes ``False`` and writes its own (then nothing already
    there is replaced). Other files in the folder are kept.
    """
    if not isinstance(export, TLExport):
        raise ExportError(f"save_transformer_lens writes a TLExport (to_transformer_lens(network)), got "
                          f"{type(export).__name__}")
    from safetensors.numpy import save

    from expressivity.manifest import NetworkEntry, check_replaceable, file_digests, refuse_present, write_manifest

    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ExportError(f"{directory} is a file; give save_transformer_lens a folder")
    if manifest:
        check_replaceable(directory, "transformer-lens", ("save_transformer_lens",), writes=tuple(FOLDER_FILES))
    else:
        refuse_present(directory, FOLDER_FILES, "save_transformer_lens")
    example = _example(export, example)
    # every file is made in memory before the folder is touched: a failure leaves nothing half-written
    contents = {"config.json": json.dumps(export.config, indent=1) + "\n",
                "model.safetensors": save({k: np.ascontiguousarray(v, dtype=np.float64)
                                           for k, v in export.state_dict.items()}),
                "README.md": _readme(export, name, folder or directory.name, example)}
    digests = file_digests({"model.safetensors": contents["model.safetensors"],
                            "config.json": contents["config.json"].encode()})
    from expressivity.manifest import with_own_digest

    # the description (claim, labels, biases kept beside the model) is digested as the files are
    description = with_own_digest(export.description() | {"sha256": digests}, "expressivity.json")
    contents["expressivity.json"] = json.dumps(description, indent=1, allow_nan=False) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / n for n in FOLDER_FILES]
    for path in paths:
        content = contents[path.name]
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if manifest:
        write_manifest(directory, "transformer-lens", "save_transformer_lens", dict(FOLDER_FILES),
                       [NetworkEntry(".", name, "transformer-lens")])
    return paths


def edited(directory: Path, desc: dict) -> str | None:
    """Why the folder's files are not those its ``expressivity.json`` was written with (its ``sha256``,
    :func:`~expressivity.manifest.file_digests`), or ``None``."""
    from expressivity.manifest import edits

    changed = edits(directory, desc, ("model.safetensors", "config.json"), "expressivity.json",
                    required=desc.get("format") == FORMAT)
    if desc and desc.get("format") != FORMAT:   # as for a network folder (safetensors_io.OLDER): relabelling must not help
        return (f"expressivity.json is in an older format ({desc.get('format')}) that does not record the SHA-256 of "
                "itself, so an edit of the folder cannot be told from the original; export it again with this version")
    if changed is None:
        return ("expressivity.json records no SHA-256 of model.safetensors, config.json and itself (its format always "
                "does: the file was edited), so nothing ties the model to the checks")
    if not changed:
        return None
    return (f"{' and '.join(changed)} {'differs' if len(changed) == 1 else 'differ'} from the files exported (SHA-256 "
            "recorded in expressivity.json): the model was changed after the export, and no check covers it")


def _example(export: TLExport, example) -> np.ndarray:
    """The README's example input ``(n, d_in)``: the given one, checked, or zeros of up to 4 tokens."""
    if example is None:
        return np.zeros((min(export.config["n_ctx"], 4), export.d_in))
    try:
        X = np.asarray(example, dtype=np.float64)
    except (TypeError, ValueError):
        X = None
    if X is None or X.ndim != 2 or X.shape[1] != export.d_in or not 1 <= X.shape[0] <= export.config["n_ctx"] \
            or not np.all(np.isfinite(X)):
        raise ExportError(f"save_transformer_lens's example must be an input (n, {export.d_in}) of finite numbers with "
                          f"1 <= n <= {export.config['n_ctx']}; give one, or leave it out for zeros")
    return X


def _readme(export: TLExport, name: str, folder: str, example: np.ndarray) -> str:
    """The folder's README: how to load and run it in TransformerLens, and what it claims."""
    from expressivity import __version__

    P = export.cost["position_dims"]
    extra = (f"dimensions {export.d}..{export.d + P - 1} are one-hot positions that carry the position biases"
             if P else "the export adds no dimensions")
    rows = [[float(v) if float(v) != int(v) else int(v) for v in row] for row in example]
    tokens = ""
    if export.tokens:
        ids = [int(np.argmax(row)) for row in example]
        tokens = f"\nA token network: `bridge.run_with_cache(torch.tensor([{ids}]))` gives the same logits.\n"
    bias = " + torch.tensor(json.load(open(\"{}/expressivity.json\"))[\"input_bias\"], dtype=torch.float64)".format(
        folder) if export.input_bias else ""
    return README.format(name=name, version=__version__, tl=TL_VERSION, folder=folder, example=json.dumps([rows]),
                         bias=bias, tokens=tokens, d=export.d, extra=extra, tol32=export.tolerance["float32"],
                         tol64=export.tolerance["float64"], claim=_claim_text(export))


def _claim_text(export: TLExport) -> str:
    """What the exported network's claim covers, in words (from the network it was exported from)."""
    from expressivity.network.lengths import ValidLengths

    net = export.network
    if net is None:
        return "The export records no claim about its inputs."
    # what expressivity.json says (export._claim): a state dict edited after the export, or lengths cut to n_ctx, were
    # said there and not here (a review, 2026-11-29)
    claim = export._claim()
    if claim.get("no_claim") is not None:
        return (f"**This model carries no claim**: {claim['no_claim']}. Its outputs approximate the construction's, "
                "unchecked.")
    valid = None if claim.get("valid_lengths") is None else ValidLengths.from_dict(claim["valid_lengths"])
    if net.trained:   # its README said "Its claim covers the inputs token ids 0..15" (an audit, 2026-11-29)
        what = "" if net.input_domain is None else \
            f" It was trained on the inputs {net.input_domain.describe(net.input_labels)}."
        return f"**A trained model carries no proven claim**: its outputs are what training made of it.{what}"
    if net.input_domain is not None and not net.input_domain.is_claim:
        # a TransformerLens checkpoint of someone's: "Its claim covers the inputs token ids 0..9" (a fresh audit)
        return (f"**This model records no claim**: it takes the inputs {net.input_domain.describe(net.input_labels)} "
                "(its embedding's token ids); nothing is proven about its answers.")
    lines = []
    if valid is not None:
        lines.append(f"It is built and verified for {valid.describe()}.")
        n_ctx = export.config.get("n_ctx")
        if isinstance(n_ctx, int) and not valid.contains(n_ctx):
            lines.append(f"**It was exported with n_ctx = {n_ctx}, outside those lengths** (`--allow-length`): "
                         "TransformerLens runs inputs of any length up to n_ctx, and those of other lengths are "
                         "outside the construction's claim.")
    if net.input_domain is not None:
        lines.append(f"Its claim covers the inputs {net.input_domain.describe(net.input_labels)}; outside them "
                     "(or at other lengths) its outputs are not covered by any check.")
        arithmetic = net.input_domain.arithmetic
        if net.input_domain.exact and not arithmetic:
            lines.append("Arithmetic: its claim is exact; TransformerLens computes in floats, whose rounding it does "
                         "not check (values of very different sizes can cancel to a wrong answer): check an answer "
                         "against the network it was exported from, in exact arithmetic.")
        if arithmetic:
            # TransformerLens runs whatever dtype it is booted in and checks nothing: say which carry the claim
            held = [name + (f" (for |x| up to {limit:.6g})" if limit is not None else "")
                    for name, limit in arithmetic.items()]
            missing = [name for name in ("float64", "float32") if name not in arithmetic]
            lines.append("Arithmetic: its claim holds in " + ", ".join(held)
                         + (f" only, not in {' or '.join(missing)}: boot the bridge in a dtype it holds in"
                            if missing else "") + "; TransformerLens checks none of this.")
    return " ".join(lines) or "The export records no claim about its inputs."


def read_folder_config(directory: Path) -> tuple[dict, dict | None]:
    """``config.json`` (and ``expressivity.json`` when present) of a TransformerLens folder; a missing or
    unreadable file is a one-line :class:`ExpressivityError` naming it and the fix."""
    directory = Path(directory)
    path = directory / "config.json"
    if not path.is_file() or not (directory / "model.safetensors").is_file():
        raise ExpressivityError(f"{directory} is not a TransformerLens folder (config.json and model.safetensors)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, RecursionError) as exc:
        raise ExpressivityError(f"{path} is not valid JSON ({' '.join(str(exc).split())}); export or save the "
                                "folder again") from None
    if not isinstance(config, dict):
        raise ExpressivityError(f"{path} is not a TransformerBridgeConfig argument object; export or save the folder "
                                "again")
    desc = None
    if (directory / "expressivity.json").is_file():
        try:
            desc = json.loads((directory / "expressivity.json").read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError, RecursionError) as exc:
            raise ExpressivityError(f"{directory}/expressivity.json is not valid JSON ({' '.join(str(exc).split())}); "
                                    "re-export the network") from None
        if not isinstance(desc, dict) or desc.get("format") not in READABLE:
            raise ExpressivityError(f"{directory}/expressivity.json is not in format {FORMAT}; re-export the network")
    from expressivity.export.safetensors_io import has_control_characters

    for name, value in (("config.json", config), ("expressivity.json", desc)):
        if has_control_characters(value):
            raise ExpressivityError(f"{directory}/{name} holds a terminal control character in a name or label; "
                                    "re-export the network")
    return config, desc
