"""Every kind of saved network, read the same way: :func:`load_saved`.

A folder a command saved (``circuit``, ``wang-e build``, ``rasp compile``, ``yun build``,
``export``, ``train``) says what it holds in ``manifest.json`` (:mod:`expressivity.manifest`):
which networks, in which form, with which report. ``PATH`` may name such a folder or a network in
it, up to two levels down (``yun build``'s ``DIR/delta_1_<N>/softened``, ``train``'s
``DIR/seed_<s>``). A folder holding several networks (``yun build --out``, ``train --out`` with
several seeds) is refused with the list of paths to name instead.

Folders without a manifest are read by their layout, tried in this order; one written by one of
those commands before manifests existed gets a line in ``Saved.warnings`` saying so:

* a **saved network**: ``PATH/network.json`` + ``weights.safetensors`` (:func:`save_network`);
* a **construction folder**: ``PATH/network/`` (``circuit --out``, ``wang-e build --out``),
  with ``PATH/report.json``;
* a **trained run**: ``PATH/checkpoint/`` (``train --out DIR`` writes ``DIR/seed_<s>/``), or a
  ``train --out`` folder holding exactly one ``seed_<s>`` run;
* a **TransformerLens folder**: ``PATH/config.json`` + ``model.safetensors`` (``export --to
  transformer-lens``, or any native model saved the same way).

There, a construction's report (checks, margins, size next to the paper's bound) is found beside
the network: ``report.json`` in the folder or its parent, or, for ``yun build --out DIR``, the
``results`` entry of ``DIR/run.json`` whose ``delta`` matches ``DIR/delta_1_<N>/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from expressivity.errors import ExpressivityError
from expressivity.network.network import Network

KINDS = ("network", "construction", "trained run", "transformer-lens")
# The commands that write manifest.json (expressivity.manifest); an output of theirs without one is old.
MANIFEST_COMMANDS = ("circuit", "wang-e build", "rasp compile", "yun build", "export", "train", "sweep run")


@dataclass(frozen=True)
class Saved:
    """A network read from a folder, with what was found beside it.

    ``kind`` is one of :data:`KINDS`; ``folder`` the folder the network was read from;
    ``report`` the construction report (``ConstructionReport.as_dict()``) when one was found;
    ``info`` other facts (a trained run's task and status, a TransformerLens config).
    """

    network: Network
    kind: str
    folder: Path
    report: dict | None = None
    report_path: Path | None = None
    info: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def typical_length(self) -> int | None:
        """The sequence length the construction was built and checked for (report constants ``n`` or
        ``length``), when the network itself takes several lengths."""
        # The network's own metadata first (a softened Yun network records n), then its report.
        constants = {**((self.report or {}).get("constants") or {}),
                     **{k: v for k, v in (self.network.metadata or {}).items() if k in ("n", "length")}}
        for key in ("n", "length"):
            value = constants.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4096:
                if self.network.max_length is None or value <= self.network.max_length:
                    return value
        return None

    def describe(self) -> dict:
        return {"kind": self.kind, "folder": str(self.folder), "name": self.network.name,
                "report": None if self.report_path is None else str(self.report_path), **self.info}


def save_construction(out_dir: Path, command: str, network: Network, report: dict, run: dict) -> None:
    """The folder every construction command writes: ``out_dir/network`` (safetensors + JSON),
    ``report.json`` (the :class:`~expressivity.constructions.report.ConstructionReport`) and
    ``run.json`` (``run`` plus the files written, relative to ``out_dir``) and ``manifest.json``, staged so a failure leaves nothing behind.
    :func:`load_saved` reads it back."""
    from expressivity.manifest import RUN_RECORD, NetworkEntry, network_files, write_manifest
    from expressivity.export.safetensors_io import save_network
    from expressivity.records import staged_output, write_json

    with staged_output(out_dir, command) as stage:
        save_network(network, stage / "network", manifest=False)
        write_json(stage / "report.json", report)
        write_json(stage / "run.json", run | {"files": ["network", "report.json"]})   # relative: the folder may move
        files = {**network_files("network/"), "run.json": RUN_RECORD,
                 "report.json": "construction report: checks, margins, size next to the paper's bound"}
        write_manifest(stage, "construction", command, files,
                       [NetworkEntry("network", network.name or command, "network", "report.json")])


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _is_report(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("checks"), list) and isinstance(obj.get("size"), dict)


def find_report(folder: Path) -> tuple[dict | None, Path | None]:
    """The construction report saved beside the network in ``folder`` (see the module notes)."""
    folder = Path(folder)
    for candidate in (folder / "report.json", folder.parent / "report.json"):
        if candidate.is_file():
            report = _read_json(candidate)
            if _is_report(report):
                return report, candidate
    # yun build --out DIR: DIR/delta_1_N/{modified,softened}, reports in DIR/run.json "results"
    delta_dir = folder.parent
    if delta_dir.name.startswith("delta_1_"):
        run = _read_json(delta_dir.parent / "run.json")
        results = run.get("results") if run else None
        want = "1/" + delta_dir.name.removeprefix("delta_1_")
        for entry in results if isinstance(results, list) else []:
            if isinstance(entry, dict) and entry.get("delta") == want and _is_report(entry):
                return {k: v for k, v in entry.items() if k != "run"}, delta_dir.parent / "run.json"
    return None, None


def _unread_reports(folder: Path, taken: Path | None) -> tuple[str, ...]:
    """A ``warnings`` line for each ``report.json`` beside the network in ``folder`` (the places
    :func:`find_report` looks) that could not be read as a construction report: a damaged report
    must not pass for a missing one, since an old network's input domain is derived from it."""
    lines = []
    for candidate in (folder / "report.json", folder.parent / "report.json"):
        if candidate.is_file() and candidate != taken and not _is_report(_read_json(candidate)):
            lines.append(f"{candidate} is not a readable construction report (damaged, or another file), so the "
                         "network was read without it: no checks are shown and no input domain is derived from it "
                         "(restore the file, or save the network again)")
    return tuple(lines)


def _networks_inside(path: Path, depth: int = 2) -> list[Path]:
    found = []
    for p in sorted(path.rglob("network.json")):
        if len(p.relative_to(path).parts) <= depth + 1:
            found.append(p.parent)
    return found


def load_saved(path) -> Saved:
    """Read any saved network (see the module notes); a one-line :class:`ExpressivityError` otherwise.

    A construction saved before networks recorded their valid lengths gets the length its report
    names (the one it was built and checked for), and one saved before networks recorded their input
    domain the domain its report (or a token network's vocabulary) describes, each with a line in
    ``Saved.warnings`` saying so; where no domain can be derived, a line says inputs are not checked.
    """
    return _with_agreement_note(
        _with_rasp_arithmetic(_with_domain(_with_lengths(_with_failed_checks(_with_rebuilt_claim(_load_saved(path)))))))


def _with_agreement_note(saved: Saved) -> Saved:
    """A softened Yun network whose report says its agreement checks could not fail for an output coordinate (the
    target's values there not above twice their absolute bound): said on every read, as the build said it. `run`
    answered [0, 1.5e-10] "within_claim: true" with no word where the verified network answers [2.9e-10, 7.1e-10]
    (a fresh audit, 2026-11-29)."""
    margins = (saved.report or {}).get("margins") or {}
    if saved.network.metadata.get("lambda") is None or "agreement_bound" not in margins:
        return saved
    from expressivity.constructions.yun.build import agreement_vacuous, vacuous_where

    if not agreement_vacuous(margins):
        return saved
    message = (f"its build's agreement checks (softened g against the verified g_bar, absolute bound "
               f"{margins['agreement_bound']:.3g}) cannot fail for {vacuous_where(margins)}, where the target's "
               "values are not above twice that bound: answers there are checked by nothing but the d_p estimate; see "
               "the report's notes")
    return replace(saved, warnings=saved.warnings + (message,))


def _with_failed_checks(saved: Saved) -> Saved:
    """A network whose construction report records a failed check carries no claim: ``yun build`` and ``circuit``
    exit 1 on a failed check but keep the folder (to look into), and ``run`` then answered from it within the
    claim, exit 0 (an audit, 2026-11-28)."""
    report, net = saved.report, saved.network
    if not isinstance(report, dict) or net.no_claim is not None or report.get("ok") is not False:
        return saved
    failed = [c.get("property") for c in report.get("checks") or () if isinstance(c, dict) and c.get("passed") is False]
    reason = (f"its construction report records a failed check ({'; '.join(map(str, failed[:2])) or 'ok: false'}), so "
              "its claim does not hold; build it again (the command that wrote it exited 1)")
    return replace(saved, network=replace(net, metadata={**net.metadata, "no_claim": reason}))


def _with_rebuilt_claim(saved: Saved) -> Saved:
    """A saved tutorial circuit, built again from the constants it records (:func:`circuit_constants`) and compared
    weight for weight (:func:`~expressivity.network.network.weights_digest`) with the network the folder holds
    (:func:`rebuilt_circuit_claim`).

    The digests in a folder tie its files to each other, but whoever edits a folder can write them again: a
    circuit with its readout doubled and its digests recomputed, or its valid lengths widened, answered wrongly
    with ``within_claim`` true (an audit, 2026-11-28). A circuit is cheap to build, and its builder is what
    proves its claim. A circuit's ``network/`` folder read on its own is rebuilt too (a review: a forged copy kept
    its claim there), from the constants in its metadata; one naming a circuit without any carries no claim.
    (Other constructions are not rebuilt here: their digests are all that ties them.)"""
    report = saved.report if saved.kind == "construction" else None   # where the constants came from
    where = "no readable report" if saved.kind == "construction" else "no constants to build it from"
    network = rebuilt_circuit_claim(saved.network, circuit_constants(saved), report, where)
    return saved if network is saved.network else replace(saved, network=network)


def rebuilt_circuit_claim(net, constants=None, report: dict | None = None, missing: str = "no constants to build "
                          "it from"):
    """``net`` as its claim stands once the tutorial circuit it names (``metadata["circuit"]``) is built again from
    ``constants`` (default: its ``metadata["circuit_constants"]``) and compared weight for weight, and ``report``'s
    bounds where given with the rebuilt report's: where they differ, or nothing can be built, ``net`` carries no
    claim (``no_claim`` says why); where they agree, its valid lengths and input domain are the rebuilt
    network's, whatever the folder said. A network naming no circuit is returned as it is. ``missing``: how to say
    there are no constants."""
    from expressivity.constructions.circuits import CIRCUITS

    name = net.metadata.get("circuit")
    if net.no_claim is not None or not isinstance(name, str) or name not in CIRCUITS:
        return net
    if constants is None:
        carried = net.metadata.get("circuit_constants")
        constants = carried if isinstance(carried, dict) else None
    if constants is None:
        reason = f"it has {missing}, so circuit {name!r} cannot be built again to confirm its weights; build it again"
        return replace(net, metadata={**net.metadata, "no_claim": reason})
    rebuilt, built_report, reason = rebuild_circuit(name, constants)
    if reason is None:
        from expressivity.network.network import weights_digest
        from expressivity.records import jsonable

        if weights_digest(rebuilt) != weights_digest(net):
            reason = f"its weights are not those of circuit {name!r} built again from the constants it records"
        elif report is not None and json.loads(json.dumps(jsonable(built_report.bounds))) != report.get("bounds"):
            reason = f"its report's bounds are not those of circuit {name!r} built again from its constants"
        elif (net.input_domain is not None and rebuilt.input_domain != net.input_domain) or \
                (net.valid_lengths is not None and rebuilt.valid_lengths != net.valid_lengths):
            # constants the weights do not show (a tolerance, with the scale given) widened the claim: report.json's
            # tolerance edited to 1e300 took a reversal's float64 limit from 56,295 to 1.8e308, and 1e12 answered
            # off by 4.9e-4 "within the claim" (an audit, 2026-11-29). The digested network.json's claim stands.
            reason = (f"the constants it records build circuit {name!r} with another claim (input domain or lengths) "
                      "than the one its network.json records")
    if reason is not None:
        reason += " (the folder was changed after it was built, or built by a version whose circuit differs); build it again"
        return replace(net, metadata={**net.metadata, "no_claim": reason})
    return replace(net, valid_lengths=rebuilt.valid_lengths, input_domain=rebuilt.input_domain)


def circuit_constants(saved: Saved) -> dict | None:
    """What building ``saved``'s circuit again takes: its report's constants with the input range (a construction
    folder), else its metadata's ``circuit_constants`` (written by ``circuit --out``); ``None`` when neither."""
    report = saved.report if saved.kind == "construction" else None
    if isinstance(report, dict) and isinstance(report.get("constants"), dict):
        return {**report["constants"], "input_range": (report.get("bounds") or {}).get("input_range")}
    carried = saved.network.metadata.get("circuit_constants")
    return carried if isinstance(carried, dict) else None


def rebuild_circuit(name, constants) -> tuple:
    """``(network, report, None)``: tutorial circuit ``name`` built again with the length, scale, tolerance, input
    range, shift and seed ``constants`` records (:func:`circuit_constants`); ``(None, None, why)`` where it cannot be."""
    import math

    from expressivity.constructions.circuits import CIRCUITS

    if not isinstance(name, str) or name not in CIRCUITS or not isinstance(constants, dict):
        return None, None, f"it names circuit {name!r} but records no constants to build it again"
    circuit = CIRCUITS[name]
    scale = constants.get("scale")
    scale = float(scale) if isinstance(scale, str) else scale       # "inf": hardmax
    input_range = constants.get("input_range")
    options = {"tolerance": constants.get("tolerance"), "seed": constants.get("seed"), "shift": constants.get("shift"),
               "pe_dim": constants.get("pe_dim"),
               "input_range": input_range if isinstance(input_range, (int, float)) and math.isfinite(input_range) else None}
    try:
        network, report = circuit.make(constants["length"], *((scale,) if circuit.scaled else ()),
                                       **{k: v for k, v in options.items() if v is not None})
    except (ExpressivityError, KeyError, TypeError, ValueError, OverflowError) as exc:
        return None, None, (f"circuit {name!r} cannot be built again from the constants it records "
                            f"({' '.join(str(exc).split())[:160]})")
    return network, report, None


def _with_lengths(saved: Saved) -> Saved:
    """Fill in ``valid_lengths`` of an old construction from its report (see :func:`load_saved`)."""
    from expressivity.network.lengths import ValidLengths

    net = saved.network
    if net.valid_lengths is not None or saved.kind != "construction":
        return saved
    length = saved.typical_length()
    if length is None or not net.structural_lengths().contains(length):
        return saved
    message = (f"{saved.folder} was saved before networks recorded their valid lengths; assuming length {length}, "
               "the one its report says it was built and checked for (rebuild it to record its own)")
    return replace(saved, network=replace(net, valid_lengths=ValidLengths.of([length])),
                   warnings=saved.warnings + (message,))


def _with_domain(saved: Saved) -> Saved:
    """Fill in ``input_domain`` of a network saved before domains were recorded (see :func:`load_saved`)."""
    net = saved.network
    if net.input_domain is not None:
        return saved
    domain, source = _derived_domain(saved)
    if domain is None:
        if saved.kind != "construction":
            return saved      # a hand-saved network or a float model: it states no claim on its inputs
        message = (f"{saved.folder} was saved before networks recorded their input domain and its report does not "
                   "describe one; its inputs are not checked against the construction's claim (rebuild it to record it)")
        return replace(saved, warnings=saved.warnings + (message,))
    saved = replace(saved, network=replace(net, input_domain=domain))
    if source is None:
        return saved
    message = (f"{saved.folder} was saved before networks recorded their input domain; using the one {source} "
               f"describes ({domain.describe(net.input_labels)}); rebuild it to record its own")
    return replace(saved, warnings=saved.warnings + (message,))


def _with_rasp_arithmetic(saved: Saved) -> Saved:
    """A RASP network compiled before its domain named the arithmetic of its claim (2026-11-29): the claim it had
    then, read now (a review, 2026-11-29: such a folder ran in float32 "within its claim", where the same network
    compiled again refuses it). Hardmax networks: exact (the proofs); softmax ones: float64, and no claim at all
    unless the report says every input was checked (the float64 check is a softmax network's claim)."""
    net = saved.network
    meta = net.metadata or {}
    if meta.get("construction") != "rasp" or net.input_domain is None or net.input_domain.arithmetic:
        return saved
    softmax = any(getattr(layer, "normalization", None) == "softmax" for layer in net.layers)
    domain = replace(net.input_domain, arithmetic={"float64": None} if softmax else {"exact": None})
    net = replace(net, input_domain=domain)
    checked = ((((saved.report or {}).get("constants") or {}).get("verification") or {}).get("inputs")
               if isinstance(saved.report, dict) else None)
    lost = softmax and not (isinstance(checked, str) and checked.startswith("exhaustive")) and net.no_claim is None
    if lost:
        net = replace(net, metadata={**net.metadata, "no_claim": (
            f"softmax attention, checked in float64 on {checked or 'inputs its folder does not record'}, not on every "
            "input: the block proofs hold in the hardmax limit only (compiled before such networks claimed only what "
            "was checked); compile it again, with hardmax attention for a proven network")})
    message = (f"{saved.folder} was compiled before RASP networks named the arithmetic of their claim: read as "
               + ("claiming no input (a softmax network checked on samples)" if lost else
                  f"holding in {'float64' if softmax else 'exact'} arithmetic only")
               + "; compile it again to record it")
    return replace(saved, network=net, warnings=saved.warnings + (message,))


def _derived_domain(saved: Saved):
    """``(domain, source)`` for a network without a recorded domain: a RASP network's vocabulary (source
    named), a token network's embedding rows (no warning: that is all a token model takes), or a
    construction's report (source named); ``(None, None)`` otherwise."""
    from expressivity.constructions.domains import domain_from_report
    from expressivity.network.domain import TAKES_ORIGIN, token_domain
    from expressivity.network.inputs import takes_tokens

    net, meta = saved.network, saved.network.metadata or {}
    if takes_tokens(net):
        vocab, bos = meta.get("vocab"), meta.get("bos")
        if (meta.get("construction") == "rasp" and isinstance(vocab, list) and isinstance(bos, str)
                and len(vocab) + 1 == net.d_in and net.input_labels[0] == "tokens:BOS"):
            return token_domain((bos, *vocab), first="tokens:BOS", labels=net.input_labels,
                                origin="derived from the RASP vocabulary"), "its RASP vocabulary"
        return token_domain(range(net.d_in), labels=net.input_labels, origin=TAKES_ORIGIN), None
    domain = domain_from_report(saved.report, net)
    return (domain, "its report") if domain is not None else (None, None)


def _load_saved(path) -> Saved:
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise ExpressivityError("give the folder of a saved network (an empty path names nothing)")
    path = Path(path)
    if not path.exists():
        raise ExpressivityError(f"{path} does not exist; give the folder of a saved network, a construction's --out "
                                "folder, a trained run folder or a TransformerLens export")
    if not path.is_dir():
        raise ExpressivityError(f"{path} is a file; give the folder that holds it ({path.parent})")
    found = _manifest_naming(path)
    if found is not None:
        return _from_manifest(path, *found)
    return _before_manifests(_by_layout(path), path)


def _manifest_naming(path: Path):
    """``(root, manifest, entries)``: the manifest of ``path`` or of a folder up to two levels above
    it, and its networks at or under ``path``; ``None`` where no manifest names anything there."""
    from expressivity.manifest import read_manifest

    for root in _and_above(path):
        manifest = read_manifest(root)
        if manifest is None:
            continue
        rel = path.relative_to(root).as_posix()
        entries = [e for e in manifest.networks
                   if rel == "." or Path(e.path).as_posix() == rel or Path(e.path).as_posix().startswith(rel + "/")]
        if entries:
            return root, manifest, rel, entries
        if root == path:
            raise ExpressivityError(f"no saved network in {path}: its manifest.json lists none")
    return None


def _and_above(path: Path) -> list[Path]:
    """``path`` and the two folders above it (a yun build's network lies two levels down)."""
    return list(dict.fromkeys((path, path.parent, path.parent.parent)))


def _from_manifest(path: Path, root: Path, manifest, rel: str, entries: list) -> Saved:
    """The network the manifest names at ``path``; a folder holding several is refused with their list."""
    exact = [e for e in entries if Path(e.path).as_posix() == rel]
    if exact or len(entries) == 1:
        return _entry(root, manifest, (exact or entries)[0])
    what = "trained runs" if all(e.form == "trained run" for e in entries) else "saved networks"
    # a training run lists its seeds' folders before it writes them (an ensemble, at its end): an interrupted one
    # named folders that did not exist (a review, 2026-11-28)
    written = [e for e in entries if (root / e.path).exists()]
    if not written:
        raise ExpressivityError(f"{path} lists {len(entries)} {what} but holds none of them yet ("
                                + ", ".join(str(root / e.path) for e in entries[:3]) + (" ..." if len(entries) > 3 else "")
                                + "): the command that writes them was interrupted or is still running; resume it "
                                "(train ... --resume) or let it finish")
    if len(written) == 1:
        return _entry(root, manifest, written[0])
    raise ExpressivityError(f"{path} holds {len(written)} {what}; name one: "
                            + ", ".join(str(root / e.path) for e in written[:8]) + (" ..." if len(written) > 8 else ""))


def _entry(root: Path, manifest, entry) -> Saved:
    """One network of a manifest, read as its ``form`` says, with the report its entry points to.

    A file the manifest lists that the network is read from (``network.json``, the weights, a
    TransformerLens folder's ``config.json``, ``model.safetensors`` and ``expressivity.json``), and
    the report its entry points to, must be there and readable: otherwise a one-line
    :class:`ExpressivityError` names the file and how to write the folder again (a missing
    ``expressivity.json`` would make an export read as a token model; a missing report, a
    construction read as if it never had one)."""
    from expressivity.export.safetensors_io import read_network as load_network
    from expressivity.manifest import NETWORK_FILES

    where = root / entry.path
    if entry.form == "trained run":
        return _trained(where)
    if entry.form == "transformer-lens":
        from expressivity.export.transformer_lens.folder import FOLDER_FILES

        read = [name for name in FOLDER_FILES if name.endswith((".json", ".safetensors"))]   # not README.md
        _require_listed(root, manifest, entry, read)
        return _transformer_lens(where, listed=True)
    _require_listed(root, manifest, entry, list(NETWORK_FILES))
    report = _listed_report(root, manifest, entry) if entry.report else None
    # a report stored beside its run record (yun build's run.json results) carries that record too
    report = None if report is None else {k: v for k, v in report.items() if k != "run"}
    where_report = None if report is None else root / entry.report.partition("#")[0]
    kind = "construction" if report is not None or manifest.kind in ("construction", "yun build") else "network"
    return Saved(load_network(where), kind, where, report, where_report)


def _again(root: Path, manifest) -> str:
    """How to write the folder at ``root`` again, by the command its manifest names (the fix for a damaged file)."""
    import shlex

    if manifest.command == "export":
        config = (_read_json(root / "run.json") or {}).get("config") or {}
        source, to = config.get("path"), config.get("to")
        source = shlex.quote(source) if isinstance(source, str) and source.strip() else "SOURCE"
        to = to if to in ("network", "transformer-lens") else manifest.kind
        return f"export the network again (expressivity export {source} --to {to} --out {shlex.quote(str(root))})"
    if manifest.command in MANIFEST_COMMANDS:
        what = "the construction" if manifest.kind in ("construction", "yun build") else f"'{manifest.command}'"
        options = ", with the options its run.json records" if (root / "run.json").is_file() else ""
        return f"run {what} again (expressivity {manifest.command} ... --out {shlex.quote(str(root))}{options})"
    return f"save the folder again with {manifest.command}"


def _require_listed(root: Path, manifest, entry, names: list[str]) -> None:
    """A one-line :class:`ExpressivityError` for the first of ``names`` (files of the entry's folder) that the
    manifest lists but that is not a file there, naming the fix (:func:`_again`)."""
    from expressivity.records import MANIFEST

    for name in names:
        rel = (Path(entry.path) / name).as_posix()
        path = root / entry.path / name
        if rel in manifest.files and not path.is_file():
            raise ExpressivityError(f"{path} is missing, though {root / MANIFEST} lists it; {_again(root, manifest)}")


def _listed_report(root: Path, manifest, entry) -> dict:
    """The construction report the entry points to (``file.json`` or ``file.json#/pointer``), or a
    one-line :class:`ExpressivityError` naming the file and the fix when it is missing, not JSON or
    not a report."""
    from expressivity.manifest import read_pointer
    from expressivity.records import MANIFEST

    name, _, pointer = entry.report.partition("#")
    path = root / name
    fix = _again(root, manifest)
    if not path.is_file():
        raise ExpressivityError(f"{path} is missing, though {root / MANIFEST} lists it as the construction report of "
                                f"{root / entry.path}; {fix}")
    try:
        json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ExpressivityError(f"{path} (the construction report {root / MANIFEST} lists) is not valid JSON "
                                f"({type(exc).__name__}); {fix}") from None
    report = read_pointer(root, entry.report)
    if not _is_report(report):
        at = f" at #{pointer}" if pointer else ""
        raise ExpressivityError(f"{path} holds no construction report{at} (checks and size), though {root / MANIFEST} "
                                f"lists one there; {fix}")
    return report


def _before_manifests(saved: Saved, path: Path) -> Saved:
    """A warning on a folder written, before manifests, by a command that writes one now."""
    from expressivity.records import written_by

    for folder in _and_above(path):
        command = written_by(folder) or ""
        # a sweep's run record holds its whole command line ("sweep run SPEC --out ...")
        if (any(command == c or command.startswith(f"{c} ") for c in MANIFEST_COMMANDS)
                and not (folder / "manifest.json").exists()):
            message = (f"{folder} was saved before manifests (no manifest.json), so it was read by its layout; "
                       f"save it again with '{command}' to record one")
            return replace(saved, warnings=saved.warnings + (message,))
    return saved


def _by_layout(path: Path) -> Saved:
    """A folder without a manifest, read by its layout (see the module notes)."""
    from expressivity.export.safetensors_io import read_network as load_network

    if (path / "network.json").exists() or (path / "weights.safetensors").exists():
        report, where = find_report(path)
        return Saved(load_network(path), "network" if report is None else "construction", path, report, where,
                     warnings=_unread_reports(path, where))
    if (path / "network").is_dir():
        report, where = find_report(path / "network")
        return Saved(load_network(path / "network"), "construction", path / "network", report, where,
                     warnings=_unread_reports(path / "network", where))
    if (path / "checkpoint").is_dir() or (path / "checkpoint.old").is_dir():
        return _trained(path)
    seeds = sorted(p for p in path.glob("seed_*") if (p / "checkpoint").is_dir() or (p / "checkpoint.old").is_dir())
    if len(seeds) == 1:
        return _trained(seeds[0])
    if len(seeds) > 1:
        raise ExpressivityError(f"{path} holds {len(seeds)} trained runs; name one: " + ", ".join(str(s) for s in seeds))
    if (path / "config.json").exists() and (path / "model.safetensors").exists():
        return _transformer_lens(path)
    inside = _networks_inside(path)
    if inside:
        raise ExpressivityError(f"{path} holds {len(inside)} saved networks; name one: "
                                + ", ".join(str(p) for p in inside[:8]) + (" ..." if len(inside) > 8 else ""))
    raise ExpressivityError(f"no saved network in {path}: expected network.json (a saved network), network/ (a "
                            "construction's --out folder), checkpoint/ (a trained run) or config.json + "
                            "model.safetensors (a TransformerLens export)")


def _transformer_lens(path: Path, listed: bool = False) -> Saved:
    """A TransformerLens folder as a network, with the valid lengths, input domain and answers its
    ``expressivity.json`` records (``listed``: a manifest lists the folder's files, checked by the caller).

    A folder whose ``config.json`` says expressivity exported it (``model_name`` ``"expressivity: ..."``)
    but that has no ``expressivity.json`` and no manifest listing it is read as a token model, with a
    line in ``Saved.warnings`` saying so and how to export it again.
    """
    from expressivity.export.transformer_lens import load_transformer_lens

    net = load_transformer_lens(path)
    config = _read_json(path / "config.json") or {}
    desc = _read_json(path / "expressivity.json") or {}
    warnings = ()
    if not listed and not (path / "expressivity.json").exists() and \
            str(config.get("model_name") or "").startswith("expressivity: "):
        warnings = (f"{path} was exported by expressivity but has no expressivity.json, so it is read as a token "
                    "model without the export's input layout, labels, valid lengths or input domain; export the "
                    "network again",)
    carried = desc.get("source_warnings")
    if isinstance(carried, list):
        warnings += tuple(f"the network it was exported from: {w}" for w in carried if isinstance(w, str))
    net = _one_value_per_token(net)   # load_transformer_lens applied the claim expressivity.json records
    source = desc.get("source")
    if "trained" not in desc and isinstance(source, dict) and source.get("kind") in ("transformer-lens", "network") \
            and net.no_claim is None:
        # written before exports recorded "trained" (2026-11-29), from another export: whether it holds a trained
        # model's weights is not recorded, and such a chain of a trained run read "within_claim: true" (a review)
        net = replace(net, metadata={**net.metadata, "no_claim": (
            "exported by an earlier version from another export, it does not record whether it holds a trained "
            "model's weights; export it again from the construction or run it came from")})
    if isinstance(source, dict) and source.get("kind") == "trained run":
        # a trained model's weights carry no proven claim, exported or not (its export answered "within_claim: true"
        # where the run itself answered null: a review, 2026-11-29); an export that records "trained" is marked by
        # load_transformer_lens
        net = replace(net, metadata={**net.metadata, "trained": True})
    return Saved(net, "transformer-lens", path, None, None,
                 {"transformer_lens_config": config, "exported_from": desc.get("source")}, warnings)


def _one_value_per_token(net: Network) -> Network:
    """An exported network whose recorded input domain names exactly one input dimension (every other
    input dimension is 0 in the claim: a circuit's ``x``, its working dimension ``out`` not), with that
    dimension as its ``input_dims``, so ``run --input 1,2,3`` takes one value per token as on the
    network exported; ``input_dims_optional`` keeps whole rows (``"1,0; 2,0; 3,0"``) accepted too."""
    from expressivity.network.inputs import takes_tokens

    domain = net.input_domain
    if domain is None or takes_tokens(net) or net.d_in < 2 or "input_dims" in net.metadata:
        return net
    used = set(domain.dims) | {d for rule in domain.rules for d in rule.dims_used()}
    if len(domain.dims) != 1 or used != set(domain.dims) or domain.dims[0] not in net.input_labels:
        return net
    return replace(net, metadata={**net.metadata, "input_dims": [domain.dims[0]], "input_dims_optional": True})


def _trained(run_dir: Path) -> Saved:
    """A trained run folder as a network (``to_network`` of its last checkpoint's model)."""
    from expressivity.nn.convert import to_network
    from expressivity.training import load_trained

    try:
        model, task, config = load_trained(run_dir)
    except ExpressivityError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ExpressivityError(f"{run_dir}/checkpoint does not hold a model of this version ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:200]}); retrain it") from None
    net = to_network(model.double())
    status = _read_json(run_dir / "checkpoint" / "config.json") or {}
    info = {"task": task.name, "task_args": config.task.args, "model_config": config.model.to_dict(),
            "seed": config.seed, "status": status.get("status"), "step": status.get("step"), "run_id": config.id()}
    # a run stopped early says so in the name every command shows: `run` headlined an interrupted run's weights after
    # 14 of 3,000 steps as a trained model (a fresh audit, 2026-11-29)
    state = {"running": f"; stopped at step {status.get('step')} of {config.train.steps}, not finished",
             "nan": f"; the loss became non-finite at step {status.get('nan_at_step')}: the last finite "
                    "checkpoint's weights"}.get(status.get("status"), "")
    net = _named(net, f"trained {'+'.join(config.model.layer_mixers())} on {task.name} (seed {config.seed}{state})")
    if net.input_domain is not None:   # a token model: its ids under the names the task gives them
        from expressivity.network.domain import token_domain

        net = replace(net, input_domain=token_domain(task.token_names(), labels=net.input_labels))
    warnings = ()
    if not isinstance(status.get("files_sha256"), dict):   # read as it is (older checkpoints), but said
        warnings = (f"{run_dir}/checkpoint records no SHA-256 of its files (written before checkpoints recorded them, "
                    "or removed), so nothing shows whether its weights were changed since training",)
    return Saved(net, "trained run", run_dir, None, None, info, warnings)


def _named(net: Network, name: str) -> Network:
    return replace(net, name=name)
