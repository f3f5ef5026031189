"""Translation validation: every block of the compiled network proven against the SOp it implements.

A sampled end-to-end check is not a proof once inputs outnumber samples. Instead each piece of
the *assembled* network (its weights, read back exactly) is checked against the piece of the
program it implements, on every value its inputs can take (the value sets are finite):

* **embedding** (and positional encoding, readout): every token and position row, exactly;
* **feed-forward block** of a Map / SequenceMap / SelectorWidth: run in exact arithmetic on every
  combination of its inputs' values (``None`` included where it occurs) and on the BOS position;
  its output must be the encoding of ``f`` there (``None``: all-zero). Values on which ``f``
  raises are skipped: the interpreter raises on any input where they occur;
* **attention head** of an Aggregate / SelectorWidth: the exact score of every (query value, key
  value) pair and of BOS: selected keys must tie above BOS (Aggregate; with BOS for a width), the
  others score below it, and a query at BOS sees BOS alone; the value path must carry every value
  of the aggregated SOp to its own encoding (BOS to 0; a width head: BOS to ``1/(w+1)``'s
  dimension). Hardmax then averages exactly the selected keys' values (the **hardmax rule**),
  which is the program's value when the selection is single-valued and, under ``causal=True``,
  backward only (:mod:`.selection` proves both before any weight is built);
* **composition**: every head reads and writes only its SOps' dimensions (and ``one``, BOS),
  every dimension has one writer, and each block runs after the writers of what it reads.

By induction over the layers, every real position then holds each SOp's value once its block
has run, and the BOS position holds 0 in every SOp dimension; the readout decodes the output.
All arithmetic is exact: integers scaled by a common denominator, in float64 only while every
partial sum is an integer below 2^53 (where float64 is exact), else in Python integers.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from expressivity.network.numbers import to_exact
from expressivity.rasp.blocks import encode
from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.language import RASPError
from expressivity.rasp.layout import BOS, ONE, Layout, width_label
from expressivity.rasp.values import stored

EXACT_FLOAT = 2 ** 53      # float64 holds every integer below this exactly
CHUNK = 2_000_000          # entries of one intermediate array


@dataclass(frozen=True)
class BlockProof:
    """What was proven about one piece of the network: ``cases`` checked exactly, described by ``text``."""

    part: str          # "embedding", "attention" or "mlp"
    sop: str
    cases: int
    text: str


# ---------------------------------------------------------------------------------------------
# exact products
# ---------------------------------------------------------------------------------------------


def _scaled(M: np.ndarray) -> tuple[np.ndarray, int]:
    """``(N, D)`` with ``M = N / D``, ``N`` an integer array (int64, or Python ints), ``D`` a positive int."""
    M = np.asarray(M)
    if M.dtype != object and np.all(np.isfinite(M)) and np.all(M == np.rint(M)) \
            and (M.size == 0 or np.max(np.abs(M)) < EXACT_FLOAT):
        return M.astype(np.int64), 1      # whole floats: the integers they are
    exact = to_exact(M)
    den = math.lcm(1, *(v.denominator for v in exact.flat if isinstance(v, Fraction)))
    N = np.empty(exact.shape, dtype=object)
    N.flat[:] = [int(v * den) for v in exact.flat] if exact.size else []
    return N, den


def _int_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` of integer arrays (int64 or Python ints), exactly: float64 BLAS when every partial sum stays an
    integer below 2^53 (returned as int64), else Python integers (an object array)."""
    if A.size == 0 or B.size == 0:
        return np.zeros((A.shape[0], B.shape[1]), dtype=np.int64)
    top = _largest(A) * _largest(B) * A.shape[1]
    if top < EXACT_FLOAT:
        return np.rint(A.astype(np.float64) @ B.astype(np.float64)).astype(np.int64)
    return A.astype(object).dot(B.astype(object))


def _largest(A: np.ndarray) -> int:
    return int(np.max(np.abs(A))) if A.dtype != object else max(abs(int(v)) for v in A.flat)


def _same(out: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Row-wise equality of two integer arrays (int64 or Python ints)."""
    if out.dtype != object and want.dtype != object:
        return np.all(out == want, axis=1)
    return np.array([all(int(a) == int(b) for a, b in zip(r, w)) for r, w in zip(out, want)], dtype=bool)


def _read_rows(M: np.ndarray) -> set[int]:
    """The rows of ``M`` holding a nonzero entry."""
    M = np.asarray(M)
    nonzero = M != 0 if M.dtype != object else np.vectorize(lambda v: v != 0, otypes=[bool])(M)
    return {int(i) for i in np.flatnonzero(np.any(nonzero, axis=1))} if M.size else set()


def _refuse(part: str, node: Node, what: str) -> RASPError:
    return RASPError(f"internal: the {part} block of {node.name!r} fails its proof ({what}); this is a compiler bug, "
                     "please report it with the program")


# ---------------------------------------------------------------------------------------------
# feed-forward blocks
# ---------------------------------------------------------------------------------------------


def _mlp_inputs(node: Node, graph: Graph, layout: Layout, values: dict, max_seq_len: int) -> tuple[list, list, dict]:
    """Per input of the block: its values and their residual entries (``{dim: number}``, ``one`` apart); and
    the BOS position's entries. A selector width's MLP reads ``1/(w+1)`` for ``w = 0..L``."""
    bos = layout.index(BOS)
    if node.kind == "selector_width":
        wdim = layout.index(width_label(node.name))
        widths = list(range(max_seq_len + 1))
        return [widths], [[{wdim: Fraction(1, w + 1)} for w in widths]], {bos: 1, wdim: 1}
    ins = [graph.nodes[i] for i in node.inputs]
    return ([values[n.id] for n in ins], [[encode(n, layout, v) for v in values[n.id]] for n in ins],
            {bos: 1})


def _meaning(node: Node, args: tuple) -> tuple[bool, object]:
    """What the interpreter gives for ``args`` (``None`` in, ``None`` out), or ``(False, None)`` if ``f`` raises."""
    if node.kind == "selector_width" and node.f is None:
        return True, args[0]
    if any(a is None for a in args):
        return True, None
    try:
        return True, node.f(*args)
    except Exception:   # noqa: BLE001 - the value stage let only ArithmeticError through; evaluate raises there too
        return False, None


def _expected(node: Node, layout: Layout, domains: list, written: list[int]) -> tuple[np.ndarray, list, int]:
    """Every combination of input value indices where ``f`` is defined (``(cases, inputs)``), what the block must
    write there (a column of ``written`` or -1 for ``None``; for a numerical SOp, the number), and how many
    combinations were skipped because ``f`` raises."""
    column = {d: k for k, d in enumerate(written)}
    grid, outputs, skipped = [], [], 0
    for index in itertools.product(*(range(len(d)) for d in domains)):
        ok, out = _meaning(node, tuple(d[k] for d, k in zip(domains, index)))
        if not ok:
            skipped += 1
            continue
        grid.append(index)
        if node.numerical:
            outputs.append(0 if out is None else stored(out))
        else:
            outputs.append(-1 if out is None else column[layout.dim_of(node.id, out)])
    return np.array(grid, dtype=np.int64).reshape(len(grid), len(domains)), outputs, skipped


def _want(node: Node, outputs: list, width: int, den: int) -> np.ndarray | None:
    """The expected outputs of some cases, times ``den``, as integer rows over the written columns."""
    W = np.zeros((len(outputs), width), dtype=object if node.numerical or den >= 2 ** 62 else np.int64)
    if node.numerical:
        for r, v in enumerate(outputs):
            x = v * den
            if Fraction(x).denominator != 1:
                return None
            W[r, 0] = int(x)
        return _compact(W)
    cols = np.array(outputs, dtype=np.int64)
    hit = cols >= 0
    W[np.flatnonzero(hit), cols[hit]] = den
    return W


def prove_mlp(W_1: np.ndarray, b_1: np.ndarray, W_2: np.ndarray, node: Node, graph: Graph, layout: Layout,
              values: dict, max_seq_len: int) -> BlockProof:
    """Run the block ``relu(x W_1 + b_1) W_2`` exactly on every input case and on BOS (module notes); raise if
    any output differs from the encoding of the SOp's value there."""
    if _read_rows(np.asarray(b_1).reshape(1, -1)):
        raise _refuse("feed-forward", node, "a hidden bias is not 0")
    domains, entries, bos_case = _mlp_inputs(node, graph, layout, values, max_seq_len)
    one = layout.index(ONE)
    allowed = {one, *bos_case} | {d for i in node.inputs for d in layout.dims[i]} \
        if node.kind != "selector_width" else {one, *bos_case}
    read, written = _read_rows(W_1), _read_rows(np.asarray(W_2).T)
    if not read <= allowed or not written <= set(layout.dims[node.id]):
        raise _refuse("feed-forward", node, "it reads or writes a dimension outside its SOps")
    read, written = sorted(read | {one}), sorted(layout.dims[node.id])
    grid, outputs, skipped = _expected(node, layout, domains, written)
    (X_bos, *factors), den_x = _scaled_rows([[bos_case]] + entries + [[{one: 1}]], read)
    one_row = factors.pop()
    W1, den1 = _scaled(np.asarray(W_1)[read])
    W2, den2 = _scaled(np.asarray(W_2)[:, written])
    W1, W2, den = _compact(W1), _compact(W2), den_x * den1 * den2
    per_chunk = max(1, CHUNK // max(1, W1.shape[1], len(written)))
    for start in range(0, len(grid) + 1, per_chunk):
        rows = grid[start:start + per_chunk]
        X = one_row + sum(F[rows[:, k]] for k, F in enumerate(factors)) if len(rows) else one_row[:0]
        if start + per_chunk > len(grid):             # the BOS position, expected all-zero
            X = np.concatenate([X, X_bos]) if X.dtype == X_bos.dtype else np.concatenate([X.astype(object),
                                                                                        X_bos.astype(object)])
        want = _want(node, outputs[start:start + per_chunk] + ([] if start + per_chunk <= len(grid) else
                                                               [0 if node.numerical else -1]), len(written), den)
        H = _int_product(X, W1)
        out = _int_product(np.where(H > 0, H, 0), W2)
        ok = _same(out, want) if want is not None else np.zeros(len(X), dtype=bool)
        if not ok.all():
            raise _refuse("feed-forward", node, f"input case {start + int(np.argmin(ok))} gives the wrong output")
    extra = f"; {skipped} where f raises skipped (evaluate raises there)" if skipped else ""
    return BlockProof("mlp", node.name, len(grid) + 1, f"exhaustive over {len(grid)} input combinations + BOS, "
                      f"exact{extra}")


def _scaled_rows(groups: list[list[dict]], columns: list[int]) -> tuple[list[np.ndarray], int]:
    """Each group of sparse rows as an integer matrix over ``columns``, all at one common denominator."""
    den = math.lcm(1, *(Fraction(v).denominator for g in groups for e in g for v in e.values()))
    mats = [_rows(g, columns, den) for g in groups]
    dtype = object if any(m.dtype == object for m in mats) else np.int64
    return [m.astype(dtype) for m in mats], den


def _rows(entries: list[dict], columns: list[int], scale: int | None = None) -> np.ndarray | None:
    """An array ``(len(entries), len(columns))`` of the exact numbers in sparse rows (dimensions outside
    ``columns`` dropped); with ``scale``, of ``scale`` times them as integers (int64 where they fit), or ``None``
    when ``scale`` does not make some entry an integer."""
    where = {c: k for k, c in enumerate(columns)}
    M = np.zeros((len(entries), len(columns)), dtype=object)
    for r, e in enumerate(entries):
        for c, v in e.items():
            if c not in where:      # a dimension the block does not read
                continue
            if scale is not None:
                v = v * scale
                if Fraction(v).denominator != 1:
                    return None
                v = int(v)
            M[r, where[c]] = v
    return M if scale is None else _compact(M)


def _compact(N: np.ndarray) -> np.ndarray:
    """An integer object array as int64 when every entry fits (fast comparisons and products)."""
    if N.dtype == object and (N.size == 0 or _largest(N) < 2 ** 62):
        return N.astype(np.int64)
    return N


# ---------------------------------------------------------------------------------------------
# attention heads
# ---------------------------------------------------------------------------------------------


def _linear(cases: list[dict], *matrices: np.ndarray) -> tuple[np.ndarray, int]:
    """``cases @ M_1 @ M_2 ...`` exactly, as ``(integers, denominator)``; ``cases`` are sparse rows over
    all ``d`` residual dimensions."""
    rows = sorted(_read_rows(matrices[0]))
    X, den = _scaled(_rows(cases, rows))
    out, first = _compact(X), True
    for M in matrices:
        N, d = _scaled(np.asarray(M)[rows] if first else M)
        out, den, first = _int_product(out, _compact(N)), den * d, False
    return out, den


def _score_gap(S: np.ndarray, table, width: bool, node: Node) -> int:
    """Check the scores ``S`` (queries + BOS by keys + BOS) against the predicate table (module notes);
    returns the smallest gap between a winning score and a losing one."""
    gaps = []
    for a, selected in enumerate(table.matrix):
        row = [int(v) for v in S[a]]
        bos, keys = row[-1], np.array(row[:-1], dtype=object)
        chosen, others = keys[selected], keys[~selected]
        top = bos if width or not len(chosen) else chosen[0]
        if len(chosen) and (any(v != top for v in chosen) or (not width and top <= bos)):
            raise _refuse("attention", node, f"query value {table.queries[a]!r}: its selected keys do not tie "
                          + ("with BOS" if width else "above BOS"))
        if len(others) and max(others) >= bos:
            raise _refuse("attention", node, f"query value {table.queries[a]!r}: an unselected key scores at or above BOS")
        gaps += [top - bos] if top != bos else []
        gaps += [bos - max(others)] if len(others) else []
    last = [int(v) for v in S[-1]]
    if len(last) > 1 and max(last[:-1]) >= last[-1]:
        raise _refuse("attention", node, "a query at BOS does not see BOS alone")
    gaps.append(last[-1] - max(last[:-1], default=last[-1] - 1))
    return min(gaps)


def _check_table(node: Node, table) -> None:
    """The table the head and the selection proofs were built from must be the predicate itself, pair by pair."""
    for a, q in enumerate(table.queries):
        for b, k in enumerate(table.keys):
            if bool(node.predicate(k, q)) != bool(table.matrix[a, b]):
                raise _refuse("attention", node, f"its predicate table is wrong at key {k!r}, query {q!r}")


def prove_head(head, node: Node, graph: Graph, layout: Layout, values: dict) -> BlockProof:
    """The head of an Aggregate / SelectorWidth against its predicate table and value path (module notes)."""
    one, bos = layout.index(ONE), layout.index(BOS)
    width = node.kind == "selector_width"
    keys, queries = node.inputs[:2]
    value_in = {bos} if width else set(layout.dims[node.inputs[2]])
    out_dims = {layout.index(width_label(node.name))} if width else set(layout.dims[node.id])
    if head.position_bias is not None or head.rotary or _read_rows(np.asarray(head.b_Q).reshape(1, -1)) \
            or not _read_rows(head.W_Q) <= {one, bos, *layout.dims[queries]} \
            or not _read_rows(head.W_K) <= {one, bos, *layout.dims[keys]} \
            or not _read_rows(head.W_V) <= value_in or not _read_rows(np.asarray(head.W_O).T) <= out_dims:
        raise _refuse("attention", node, "it reads or writes a dimension outside its SOps, or has a bias")
    table = node.table
    _check_table(node, table)
    real = lambda sop, vals: [{one: 1, **encode(graph.nodes[sop], layout, v)} for v in vals]  # noqa: E731
    A, den_q = _linear(real(queries, table.queries) + [{bos: 1}], head.W_Q)
    B, den_k = _linear(real(keys, table.keys) + [{bos: 1}], head.W_K)
    gap = Fraction(_score_gap(_int_product(A, B.T), table, width, node), den_q * den_k)
    if width:
        cases, expected = [{bos: 1}], [{layout.index(width_label(node.name)): 1}]
    else:
        src = graph.nodes[node.inputs[2]]
        cases = [encode(src, layout, v) for v in values[src.id]] + [{bos: 1}]
        expected = [encode(node, layout, v) for v in values[src.id]] + [{}]
    out, den = _linear(cases, head.W_V, head.W_O)
    columns = sorted(out_dims)
    want = _rows(expected, columns, den)
    if want is None or not _same(out[:, columns], want).all():
        raise _refuse("attention", node, "its value path does not carry every value to its own encoding")
    n = (len(table.queries) + 1) * (len(table.keys) + 1) + len(cases)
    rule = ("selected keys tie with BOS, the others score below it (BOS weight 1/(w+1))" if width else
            "selected keys tie above BOS, the others below it (their mean; BOS, value 0, when none)")
    facts = "; ".join(f"{k}: {v}" for k, v in node.proofs.items() if v)
    carried = "BOS to 1/(w+1)" if width else f"{len(cases) - 1} values + BOS"
    return BlockProof("attention", node.name, n, f"scores exhaustive over {len(table.queries)}x{len(table.keys)} query x "
                      f"key values + BOS, value path {carried}, exact; hardmax rule: {rule}, score gap {gap}"
                      + (f"; {facts}" if facts else ""))


# ---------------------------------------------------------------------------------------------
# input, output, composition
# ---------------------------------------------------------------------------------------------


def _equal(M, expected: list[dict], what: str, node_name: str) -> None:
    """The exact matrix ``M`` (rows) must equal the sparse rows ``expected`` (``M`` absent: all of them empty)."""
    if M is None:
        if any(expected):
            raise RASPError(f"internal: the {what} of {node_name!r} is missing; this is a compiler bug")
        return
    N, den = _scaled(M)
    want = _rows(expected, list(range(N.shape[1])), den)
    if want is None or N.shape[0] != len(expected) or not _same(_compact(N), want).all():
        raise RASPError(f"internal: the {what} of {node_name!r} fails its proof; this is a compiler bug, please "
                        "report it with the program")


def prove_io(network, graph: Graph, layout: Layout, values: dict, vocab: list, max_seq_len: int) -> BlockProof:
    """Embedding (BOS and every token), positional encoding (every position) and readout, row by row."""
    one, bos = layout.index(ONE), layout.index(BOS)
    constant = [n for n in graph.nodes if n.kind in ("tokens", "full")]
    rows = [{bos: 1}]
    for token in vocab:
        row = {one: 1}
        for n in constant:
            row.update(encode(n, layout, token if n.kind == "tokens" else n.fill))
        rows.append(row)
    name = network.name
    _equal(network.embedding, rows, "embedding", name)
    index = [n for n in graph.nodes if n.kind == "indices"]    # indices and its annotated copies
    positions = [{}] + [{d: v for n in index for d, v in encode(n, layout, p).items()}
                        for p in range(max_seq_len)]
    _equal(network.positional_encoding, positions, "positional encoding", name)
    out = layout.dims[graph.output]
    _equal(network.readout, _readout_rows(layout, out), "readout", name)
    for bias, what in ((network.embedding_bias, "embedding bias"), (network.readout_bias, "readout bias")):
        if bias is not None and _read_rows(np.asarray(bias).reshape(1, -1)):
            raise RASPError(f"internal: the {what} of {name!r} is not 0; this is a compiler bug")
    if network.final_norm is not None:
        raise RASPError(f"internal: {name!r} has a final norm; this is a compiler bug")
    n = len(rows) + len(positions) + len(layout.labels)
    return BlockProof("embedding", "tokens, indices, output", n, f"embedding over {len(rows)} tokens (BOS included), "
                      f"positions 0..{max_seq_len}, readout of {len(out)} dimensions, exact")


def _readout_rows(layout: Layout, out: list[int]) -> list[dict]:
    where = {dim: j for j, dim in enumerate(out)}
    return [{where[i]: 1} if i in where else {} for i in range(len(layout.labels))]


def _prove_order(graph: Graph, layout: Layout) -> None:
    """Each SOp is written by one sublayer (a width: its attention, then its MLP), after those of what it reads."""
    written: dict[int, int] = {}
    for s, (kind, ids) in enumerate(layout.sublayers):
        for i in ids:
            node = graph.nodes[i]
            if kind == "mlp" or node.kind == "aggregate":
                if i in written:
                    raise RASPError(f"internal: {node.name!r} is written twice; this is a compiler bug")
                written[i] = s
    for s, (kind, ids) in enumerate(layout.sublayers):
        for i in ids:
            node = graph.nodes[i]
            reads = node.inputs if not (kind == "mlp" and node.kind == "selector_width") else ()
            for j in reads:
                if graph.nodes[j].kind not in ("tokens", "indices", "full") and written.get(j, s) >= s:
                    raise RASPError(f"internal: {node.name!r} runs before {graph.nodes[j].name!r}; this is a compiler "
                                    "bug")
            if kind == "mlp" and node.kind == "selector_width" and layout.sublayers[s - 1][0] != "attention" \
                    or kind == "mlp" and node.kind == "selector_width" and i not in layout.sublayers[s - 1][1]:
                raise RASPError(f"internal: the width MLP of {node.name!r} does not follow its head; compiler bug")
    missing = [n.name for n in graph.nodes if n.kind not in ("tokens", "indices", "full") and n.id not in written]
    if missing:
        raise RASPError(f"internal: {missing[0]!r} is never written; this is a compiler bug")


def prove_network(network, graph: Graph, layout: Layout, sublayers: list[list], values: dict, vocab: list,
                  max_seq_len: int, causal: bool) -> list[BlockProof]:
    """Every block of ``network`` proven (module notes), in order; raises :class:`RASPError` at the first that
    fails (a compiler bug) so that no unproven network is returned."""
    from expressivity.network.activations import ReLU

    proofs = [prove_io(network, graph, layout, values, vocab, max_seq_len)]
    _prove_order(graph, layout)
    if len(network.layers) != len(layout.sublayers):
        raise RASPError("internal: the network's layers do not match the layout; this is a compiler bug")
    for (kind, _), blocks, layer in zip(layout.sublayers, sublayers, network.layers):
        if kind == "attention":
            if layer.kind != "attention" or layer.causal != causal or len(layer.heads) != len(blocks) \
                    or layer.norm is not None or layer.normaliser != "visible":
                raise RASPError(f"internal: layer {layer.name!r} is not the attention layer of its blocks")
            proofs += [prove_head(h, graph.nodes[b.node], graph, layout, values) for h, b in zip(layer.heads, blocks)]
            continue
        if layer.kind != "feedforward" or not isinstance(layer.activation, ReLU) or layer.norm is not None \
                or _read_rows(np.asarray(layer.b_2).reshape(1, -1)):
            raise RASPError(f"internal: layer {layer.name!r} is not the ReLU feed-forward layer of its blocks")
        start = 0
        for b in blocks:
            cut = slice(start, start + len(b.units))
            proofs.append(prove_mlp(layer.W_1[:, cut], layer.b_1[cut], layer.W_2[cut], graph.nodes[b.node], graph,
                                    layout, values, max_seq_len))
            start += len(b.units)
        if start != layer.W_1.shape[1]:
            raise RASPError(f"internal: layer {layer.name!r} has hidden units no block owns; this is a compiler bug")
    return proofs
