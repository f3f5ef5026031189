"""Translation validation (rasp/proofs.py): every block is proven, and a wrong weight anywhere fails its proof."""

from dataclasses import replace

import numpy as np
import pytest

from expressivity import rasp
from expressivity.network import Head
from expressivity.rasp import library as lib
from expressivity.rasp.blocks import attention_block, mlp_block
from expressivity.rasp.graph import build_graph, fuse_maps
from expressivity.rasp.language import RASPError
from expressivity.rasp.layout import allocate
from expressivity.rasp.assemble import assemble
from expressivity.rasp.proofs import prove_network
from expressivity.rasp.selection import prove_selections
from expressivity.rasp.values import infer_values


def build(program, vocab, L, causal=False):
    """The compiler's stages up to the assembled network, without its proofs."""
    graph = build_graph(program)
    values = infer_values(graph, vocab, L)
    prove_selections(graph, values, causal=causal, vocab=vocab, max_seq_len=L, exhaustive_limit=4096)
    graph, values = fuse_maps(graph, values)
    layout = allocate(graph, values)
    sublayers = [[attention_block(graph.nodes[i], graph, layout, values, snap=True) if kind == "attention" else
                  mlp_block(graph.nodes[i], graph, layout, values, False, L) for i in ids]
                 for kind, ids in layout.sublayers]
    net = assemble(graph, values, layout, sublayers, vocab, L, scale=float("inf"), bos="BOS", name="p",
                   causal=causal)
    return net, (graph, layout, sublayers, values, vocab, L, causal)


def prove(net, parts):
    graph, layout, sublayers, values, vocab, L, causal = parts
    return prove_network(net, graph, layout, sublayers, values, vocab, L, causal)


def with_layer(net, k, layer):
    layers = list(net.layers)
    layers[k] = layer
    return replace(net, layers=tuple(layers))


def nudge(M, where=None, by=1):
    M = np.array(M, dtype=object).copy()
    r, c = where if where is not None else tuple(np.argwhere(M != 0)[0])
    M[r, c] = M[r, c] + by
    return M


@pytest.fixture(scope="module")
def sort_network():
    return build(lib.make_sort(rasp.tokens, rasp.tokens, max_seq_len=4, min_key=1), [1, 2, 3], 4)


def test_every_block_of_a_program_gets_a_proof(sort_network):
    net, parts = sort_network
    proofs = prove(net, parts)
    blocks = [b for bs in parts[2] for b in bs]
    assert len(proofs) == 1 + len(blocks) and proofs[0].part == "embedding"
    assert all(p.cases > 0 and p.text for p in proofs)
    mlp = [p for p in proofs if p.part == "mlp"]
    assert any("exhaustive over 12 input combinations + BOS" in p.text for p in mlp)   # 3 tokens x 4 indices
    heads = [p for p in proofs if p.part == "attention"]
    assert any("single-valued: R1" in p.text for p in heads)


@pytest.mark.parametrize("part", ["W_1", "W_2", "b_1"])
def test_a_wrong_feed_forward_weight_fails_its_proof(sort_network, part):
    net, parts = sort_network
    k = next(i for i, layer in enumerate(net.layers) if layer.kind == "feedforward")
    layer = net.layers[k]
    value = np.array(getattr(layer, part), dtype=object)
    changed = nudge(value) if part != "b_1" else value + 1
    with pytest.raises(RASPError, match="feed-forward block .* fails its proof"):
        prove(with_layer(net, k, replace(layer, **{part: changed})), parts)


@pytest.mark.parametrize("part, words", [("W_Q", "selected keys|unselected key|BOS"), ("W_K", "selected keys|unselected"
                                                                                                 " key|BOS"),
                                         ("W_V", "value path"), ("W_O", "value path")])
def test_a_wrong_attention_weight_fails_its_proof(sort_network, part, words):
    net, parts = sort_network
    k = max(i for i, layer in enumerate(net.layers) if layer.kind == "attention")     # the sort's copy head
    layer = net.layers[k]
    head = layer.heads[0]
    M = np.array(getattr(head, part), dtype=object)
    changed = nudge(M, by=-3 if part in ("W_Q", "W_K") else 1)
    new_head = Head(**{**{f: getattr(head, f) for f in ("W_Q", "W_K", "W_V", "W_O", "b_Q")}, part: changed},
                    name=head.name)
    with pytest.raises(RASPError, match=f"attention block .* fails its proof .*({words})"):
        prove(with_layer(net, k, replace(layer, heads=(new_head,))), parts)


def test_a_head_reading_another_sops_dimension_fails_its_proof(sort_network):
    net, parts = sort_network
    layout = parts[1]
    k = max(i for i, layer in enumerate(net.layers) if layer.kind == "attention")
    head = net.layers[k].heads[0]
    W_Q = np.array(head.W_Q, dtype=object)
    W_Q[layout.index("tokens:2"), 0] = 1      # the copy head's queries are indices, not tokens
    bad = Head(W_Q, head.W_K, head.W_V, head.W_O, name=head.name)
    with pytest.raises(RASPError, match="reads or writes a dimension outside its SOps"):
        prove(with_layer(net, k, replace(net.layers[k], heads=(bad,))), parts)


@pytest.mark.parametrize("part", ["embedding", "positional_encoding", "readout"])
def test_a_wrong_input_or_output_row_fails_its_proof(sort_network, part):
    net, parts = sort_network
    M = np.array(getattr(net, part), dtype=object)
    with pytest.raises(RASPError, match="fails its proof"):
        prove(replace(net, **{part: nudge(M, where=(1, 0))}), parts)


def test_a_wrong_predicate_table_is_caught_at_the_head(sort_network):
    net, parts = sort_network
    graph = parts[0]
    node = next(n for n in graph.nodes if n.kind == "aggregate")
    node.table.matrix[0, 0] = not node.table.matrix[0, 0]
    try:
        with pytest.raises(RASPError, match="predicate table is wrong"):
            prove(net, parts)
    finally:
        node.table.matrix[0, 0] = not node.table.matrix[0, 0]


def test_compile_reports_a_proof_for_every_block():
    model = rasp.compile(lib.make_sort_freq(5), vocab={1, 2, 3}, max_seq_len=5)
    check = model.report.check("every block proven")
    blocks = model.report.constants["blocks"]
    assert check.passed and check.details["blocks"] == len(blocks) + 1
    assert all(b["proof"].startswith(("exhaustive", "scores exhaustive")) and b["proof_cases"] > 0 for b in blocks)
    assert "proven block by block" in model.report.claim


def test_none_keys_and_queries_are_read_through_one_exactly_as_evaluate_reads_them():
    previous = lib.shift_by(1, rasp.tokens)                       # None at position 0
    same_as_previous = rasp.SelectorWidth(rasp.Select(previous, rasp.tokens, lambda k, q: k is None or k == q))
    program = rasp.numerical(same_as_previous).named("w")
    model = rasp.compile(program, vocab={1, 2}, max_seq_len=4)
    for xs in ([1], [1, 1], [2, 1, 2, 2], [1, 2, 1, 2]):
        assert model.apply(["BOS", *xs]).decoded[1:] == rasp.evaluate(program, xs)
    with pytest.raises(RASPError, match="predicate fails on key None.*may be None"):
        rasp.compile(rasp.SelectorWidth(rasp.Select(previous, rasp.tokens, rasp.Comparison.LT)), vocab={1, 2},
                     max_seq_len=3)


def _layer_of(net, kind, last=False):
    ks = [i for i, layer in enumerate(net.layers) if layer.kind == kind]
    return ks[-1] if last else ks[0]


def _corrupt(net, parts, what):
    """``net`` with one part changed that every proof must refuse (mutation testing, 2026-11-28, found each of these
    checks could be dropped with no test failing)."""
    from expressivity.network.layers import LayerNorm

    layout, d = parts[1], net.d
    one_hot = np.zeros(d)
    one_hot[0] = 1
    if what in ("embedding_bias", "readout_bias"):
        return replace(net, **{what: one_hot[:net.embedding.shape[1]] if what == "embedding_bias"
                               else np.eye(net.readout.shape[1])[0]})
    if what == "final_norm":
        return replace(net, final_norm=LayerNorm(np.ones(d), np.zeros(d)))
    if what == "readout_half":   # 1.5 where 1 belongs, in float64: not read as the integer 1
        readout = np.array(net.readout, dtype=np.float64)
        readout[readout != 0] += 0.5
        return replace(net, readout=readout)
    k = _layer_of(net, "attention", last=True)
    attention, head = net.layers[k], net.layers[k].heads[0]
    if what in ("causal", "norm"):
        return with_layer(net, k, replace(attention, **{"causal": True} if what == "causal" else
                                          {"norm": LayerNorm(np.ones(d), np.zeros(d))}))
    if what in ("b_Q", "W_V"):
        fields = {f: getattr(head, f) for f in ("W_Q", "W_K", "W_V", "W_O", "b_Q")}
        if what == "b_Q":
            fields["b_Q"] = np.ones(np.asarray(head.W_Q).shape[1])
        else:   # the copy head's values read an index dimension besides the tokens
            W_V = np.array(head.W_V, dtype=object)
            W_V[layout.index("indices:0"), 0] = 1
            fields["W_V"] = W_V
        return with_layer(net, k, replace(attention, heads=(Head(**fields, name=head.name),)))
    k = _layer_of(net, "feedforward")
    ff = net.layers[k]
    if what == "b_2":
        return with_layer(net, k, replace(ff, b_2=one_hot))
    if what == "unowned_unit":
        zero_column = np.zeros((d, 1))
        return with_layer(net, k, replace(ff, W_1=np.hstack([np.asarray(ff.W_1, dtype=object), zero_column]),
                                          b_1=np.append(np.asarray(ff.b_1, dtype=object), 0),
                                          W_2=np.vstack([np.asarray(ff.W_2, dtype=object), np.zeros((1, d))])))
    if what == "reads_outside":   # the first MLP (unique keys) reads a dimension of the sort's output
        W_1 = np.array(ff.W_1, dtype=object)
        W_1[layout.index("sort:1"), 0] = 1
        return with_layer(net, k, replace(ff, W_1=W_1))
    raise AssertionError(what)


@pytest.mark.parametrize("what, words", [
    ("embedding_bias", "embedding bias .* is not 0"),
    ("readout_bias", "readout bias .* is not 0"),
    ("final_norm", "has a final norm"),
    ("readout_half", "readout .* fails its proof"),
    ("causal", "is not the attention layer of its blocks"),
    ("norm", "is not the attention layer of its blocks"),
    ("b_Q", "reads or writes a dimension outside its SOps, or has a bias"),
    ("W_V", "reads or writes a dimension outside its SOps, or has a bias"),
    ("b_2", "is not the ReLU feed-forward layer of its blocks"),
    ("unowned_unit", "has hidden units no block owns"),
    ("reads_outside", "feed-forward block .* reads or writes a dimension outside its SOps"),
])
def test_every_structural_check_of_the_proof_refuses_its_own_corruption(sort_network, what, words):
    net, parts = sort_network
    with pytest.raises(RASPError, match=words):
        prove(_corrupt(net, parts, what), parts)


@pytest.mark.parametrize("selected, scores", [
    ([[True, False]], [[5, 1, 5], [0, 0, 1]]),    # the selected key ties BOS: it would share the mean with BOS
    ([[True, False]], [[5, 3, 3], [0, 0, 1]]),    # an unselected key ties BOS
    ([[True, True]], [[5, 4, 1], [0, 0, 1]]),     # two selected keys that do not tie
    ([[True, False]], [[5, 1, 3], [1, 0, 1]]),    # a query at BOS sees a key as high as BOS
])
def test_a_score_table_off_the_hardmax_rule_by_a_tie_is_refused(selected, scores):
    """The score checks at their boundaries (mutation testing: each could be loosened from >= to > with no test
    failing). Rows: query values, then BOS; columns: keys, then BOS."""
    from types import SimpleNamespace

    from expressivity.rasp.proofs import _score_gap

    table = SimpleNamespace(matrix=np.array(selected), queries=["q"] * len(selected))
    with pytest.raises(RASPError, match="fails its proof"):
        _score_gap(np.array(scores, dtype=object), table, False, SimpleNamespace(name="agg"))
    fine = np.array([[5, 1, 3], [0, 0, 1]], dtype=object)   # selected above BOS, the other below, BOS alone at BOS
    assert _score_gap(fine, SimpleNamespace(matrix=np.array([[True, False]]), queries=["q"]), False,
                      SimpleNamespace(name="agg")) == 1


def test_an_integer_product_past_2_53_in_its_partial_sums_is_exact():
    """Each entry is below 2^53 but the sum of products is 3 * 2^52 + 2^26 + 1, past it: float64 would round."""
    from expressivity.rasp.proofs import _int_product

    A = np.array([[2**26, 2**26, 2**26, 1]], dtype=np.int64)
    B = np.array([[2**26 + 1], [2**26], [2**26], [1]], dtype=np.int64)
    assert int(_int_product(A, B)[0, 0]) == 3 * 2**52 + 2**26 + 1


def test_a_block_placed_with_the_sublayer_that_writes_its_input_is_refused(sort_network):
    """Each SOp runs after what it reads: the copy head moved into the sublayer that writes its 'target_pos' reads it
    before it exists (mutation testing: the order check made strict passed every test)."""
    from expressivity.rasp.proofs import _prove_order

    _, parts = sort_network
    graph, layout = parts[0], parts[1]
    _prove_order(graph, layout)   # the compiler's order holds
    *before, (kind, ids), _ = layout.sublayers   # ..., ("mlp", (target_pos,)), ("attention", (sort,))
    sort = next(n.id for n in graph.nodes if n.name == "sort")
    moved = replace(layout, sublayers=(*before, (kind, (*ids, sort))))
    with pytest.raises(RASPError, match="'sort' runs before 'target_pos'"):
        _prove_order(graph, moved)
