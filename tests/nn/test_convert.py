"""Trained models and networks are one representation: ``to_network`` and ``from_network`` keep
the function, for every switch of the family, every tutorial circuit and a Yun network."""

import math

import numpy as np
import pytest
import torch

from expressivity.constructions.circuits import CIRCUITS, embed
from expressivity.constructions.yun.compile import compile_modified
from expressivity.constructions.yun.constants import YunParams
from expressivity.errors import ExpressivityError, NetworkError
from expressivity.network import (AttentionLayer, FeedForwardLayer, Head, LayerNorm, MatrixBias, MixingHead, MixingLayer,
                                  Network, PiecewiseLinear, RelativeBias, SlopeBias, one_hot)
from expressivity.network.exact import forward_exact
from expressivity.network.reference import forward as reference_forward
from expressivity.nn import APE_NAMES, MIXER_NAMES, MIXERS, RPE_NAMES, Model, ModelConfig, from_network, to_network
from expressivity.targets import get_target

MAX_LEN = 8
PL = PiecewiseLinear((-0.5, 0.5), (0.0, 1.0, 0.0), (-0.5, 0.0, 0.5)).to_dict()
SWITCHES = {
    "mixer": MIXER_NAMES, "rpe": RPE_NAMES, "ape": APE_NAMES, "rotary": (False, True), "norm": ("none", "pre"),
    "causal": (True, False), "ffn_width": (0, 6), "tokens": (False, True), "normalization": ("softmax", "hardmax"),
    "dpfree_normaliser": ("visible", "infinite"), "activation": ("relu", "gelu", "piecewise", "per-layer"),
    "learnable_slopes": (False, True), "q_bias": (False, True),
}
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "piecewise": PL, "per-layer": ("gelu", PL)}


def _config(rng: np.random.Generator, forced: dict) -> dict:
    """Random switches, ``forced`` ones fixed, redrawn until the config is valid."""
    for _ in range(500):
        pick = {k: v[rng.integers(len(v))] for k, v in SWITCHES.items()} | forced
        kwargs = dict(vocab_size=5 if pick["tokens"] else 0, d_in=3, d_out=2, max_len=MAX_LEN, layers=2, heads=2, d_model=4,
                      mixer=(pick["mixer"], MIXER_NAMES[rng.integers(len(MIXER_NAMES))]),
                      activation=ACTIVATIONS[pick["activation"]], qk_scale=None if rng.random() < 0.5 else 0.7,
                      **{k: pick[k] for k in SWITCHES.keys() - {"mixer", "tokens", "activation"}})
        try:
            ModelConfig(**kwargs)
        except ExpressivityError:
            continue
        return kwargs
    raise AssertionError(f"no valid config with {forced}")


def _cases() -> list[tuple[str, dict]]:
    """One config per value of every switch, plus every (head-based mixer, rpe) pair."""
    rng = np.random.default_rng(0)
    cases = [(f"{k}={v}", {k: v}) for k, values in SWITCHES.items() for v in values]
    cases += [(f"{m}+{r}", {"mixer": m, "rpe": r}) for m in ("attention", "dpfree") for r in RPE_NAMES]
    return [(name, _config(rng, forced)) for name, forced in cases]


CASES = _cases()


def _random_model(kwargs: dict, seed: int) -> Model:
    torch.manual_seed(seed)
    model = Model(ModelConfig(**kwargs)).double()
    with torch.no_grad():   # every parameter and buffer random, so each one is checked
        for p in list(model.parameters()) + list(model.buffers()):
            p.copy_(torch.randn_like(p) * 0.5)
    return model


def _inputs(model: Model, n: int):
    g = torch.Generator().manual_seed(n)
    cfg = model.cfg
    if cfg.vocab_size:
        ids = torch.randint(0, cfg.vocab_size, (3, n), generator=g)
        return ids, one_hot(ids.numpy(), cfg.vocab_size)
    x = torch.randn(3, n, cfg.d_in, generator=g, dtype=torch.float64)
    return x, x.numpy()


def _deviation(got, want) -> float:
    """Max abs deviation relative to the output scale."""
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / (1 + np.max(np.abs(want))))


@pytest.mark.parametrize("kwargs", [c for _, c in CASES], ids=[name for name, _ in CASES])
@pytest.mark.parametrize("n", [MAX_LEN, 5])
def test_every_model_is_a_network_and_comes_back(kwargs, n):
    model = _random_model(kwargs, seed=n)
    net = to_network(model)
    x, X = _inputs(model, n)
    with torch.no_grad():
        y = model(x).numpy()
    assert _deviation(reference_forward(net, X), y) < 1e-10
    back = from_network(net, tokens=model.cfg.vocab_size > 0)
    with torch.no_grad():
        assert _deviation(back(x).numpy(), y) < 1e-10
    assert _deviation(reference_forward(to_network(back), X), y) < 1e-10


def test_round_trips_cover_every_value_of_every_switch():
    seen = {k: set() for k in SWITCHES}
    for _, kwargs in CASES:
        cfg = ModelConfig(**kwargs)
        seen["mixer"] |= set(cfg.layer_mixers())
        seen["tokens"].add(cfg.vocab_size > 0)
        seen["activation"].add(next(k for k, v in ACTIVATIONS.items() if v == kwargs["activation"]))
        for k in SWITCHES.keys() - {"mixer", "tokens", "activation"}:
            seen[k].add(getattr(cfg, k))
    assert all(set(SWITCHES[k]) == seen[k] for k in SWITCHES), seen


@pytest.mark.parametrize("name", sorted(CIRCUITS))
@pytest.mark.parametrize("length", [1, 4, 9])
def test_every_tutorial_circuit_loads_and_agrees(name, length):
    circuit = CIRCUITS[name]
    for scale in ((math.inf, 3.0) if circuit.scaled else (None,)):
        net, _ = circuit.make(length, scale, input_range=2.0)   # values in [-1, 1): inside the input domain
        X = embed(net, np.random.default_rng(length).uniform(-1, 1, size=(4, length)))
        model = from_network(net)
        with torch.no_grad():
            got = model(torch.tensor(X)).numpy()
        assert _deviation(got, reference_forward(net, X)) < 1e-10, (name, scale)
        if net.layers[0].normalization == "hardmax":
            assert _deviation(got, forward_exact(net, X).astype(float)) < 1e-10


def test_a_yun_network_loads_as_hardmax_blocks_and_ffn_only_blocks():
    net = compile_modified(get_target("smooth-rank"), YunParams(2, 1, 2)).network
    model = from_network(net)
    assert model.cfg.normalization == "hardmax" and "none" in model.cfg.layer_mixers()
    assert {a.kind for a in model.cfg.layer_activations()} == {"piecewise"}
    X = np.random.default_rng(0).random((32, 2, 1))
    with torch.no_grad():
        got = model(torch.tensor(X)).numpy()
    # the float64 pass of the same weights (outside the claim, which holds in exact arithmetic), then the exact one
    assert _deviation(got, reference_forward(net, X, allow_outside=True)) < 1e-10
    assert _deviation(got, forward_exact(net, X).astype(float)) < 1e-10


def _small_network(causal=True, with_pe=False):
    rng = np.random.default_rng(0)
    d = 3
    h1 = Head(rng.normal(size=(d, 2)), rng.normal(size=(d, 2)), rng.normal(size=(d, 1)), rng.normal(size=(1, d)),
              b_Q=rng.normal(size=2), position_bias=RelativeBias.from_function(lambda o: -0.5 * abs(o), 3, default=-2.0))
    h2 = Head(rng.normal(size=(d, 3)), rng.normal(size=(d, 3)), rng.normal(size=(d, 3)), rng.normal(size=(3, d)))
    layers = [
        FeedForwardLayer(rng.normal(size=(d, 4)), rng.normal(size=4), rng.normal(size=(4, d)), rng.normal(size=d)),
        AttentionLayer([h1, h2], inverse_temperature=0.7, causal=causal),
        AttentionLayer([h2], causal=causal),
        FeedForwardLayer(rng.normal(size=(d, 2)), rng.normal(size=2), rng.normal(size=(2, d))),
    ]
    pe = rng.normal(size=(6, d)) if with_pe else None
    return Network(layers, labels=("a", "b", "c"), readout=rng.normal(size=(d, 2)), positional_encoding=pe)


@pytest.mark.parametrize("causal,with_pe", [(True, False), (False, True)])
def test_mixed_networks_load_with_padding_and_regrouping(causal, with_pe):
    net = _small_network(causal, with_pe)
    X = np.random.default_rng(1).normal(size=(4, 6, 3))
    model = from_network(net, max_len=6)
    with torch.no_grad():
        assert _deviation(model(torch.tensor(X)).numpy(), reference_forward(net, X)) < 1e-10
    assert model.cfg.layer_mixers() == ("none", "attention", "attention")
    assert model.cfg.rpe == "free" and model.cfg.d_head == 3


def _eye_head(**kw):
    return Head(np.eye(2), np.eye(2), np.eye(2), np.eye(2), **kw)


def _dp_free(bias):
    return Head.dp_free(np.eye(2), np.eye(2), bias)


LN = LayerNorm(np.ones(2), np.zeros(2))
FFN = FeedForwardLayer(np.eye(2), np.zeros(2), np.eye(2))


@pytest.mark.parametrize("layers, kwargs, match", [
    ([], {}, "no layers"),
    ([AttentionLayer([_eye_head()], causal=True), AttentionLayer([_eye_head()])], {}, "layer 1 is bidirectional but layer 0 is causal; the trained family has one choice"),
    ([AttentionLayer([_eye_head()], normalization="hardmax"), AttentionLayer([_eye_head()])], {}, "layer 1 uses softmax but layer 0 uses hardmax"),
    ([AttentionLayer([_eye_head(rotary=True), _eye_head()])], {}, "layer 0 has a plain head but layer 0 has a rotary head"),
    ([MixingLayer((MixingHead(np.eye(2), np.eye(2), kernel=np.ones((2, 2))),) * 2)], {}, "layer 0: a mixing layer of 2 heads"),
    ([MixingLayer((MixingHead(2 * np.eye(2), np.eye(2), kernel=np.ones((2, 2)), left=1),))], {},
     r"layer 0: a mixing layer of 1 head does not load; .*one convolution head on the residual itself \(W_V = I\) \(sepconv\)"),
    ([AttentionLayer([_eye_head()], causal=True), MixingLayer((MixingHead(np.eye(2), np.eye(2), matrix=np.ones((3, 3))),))],
     {}, "layer 1: its mixing matrix looks ahead"),
    ([AttentionLayer([_eye_head()]), MixingLayer((MixingHead(np.eye(2), np.eye(2), kernel=np.ones((3, 2)), left=2),))],
     {}, "layer 1: a convolution with left=2 is not centred"),
    ([AttentionLayer([_dp_free(RelativeBias(((0, 0.0),), default=-np.inf))], causal=True, normaliser="infinite")], {},
     "infinite past loads only"),
    ([AttentionLayer([_eye_head()], norm=LN), FFN], {}, "layer 1 has no pre-norm but layer 0 has a pre-norm"),
    ([AttentionLayer([_eye_head()], norm=LayerNorm(np.ones(2), np.zeros(2), eps=1e-6))], {"final_norm": LN}, "layer 0: .*eps"),
    ([AttentionLayer([_eye_head()], norm=LN)], {}, "pre-norms but no final norm"),
    ([AttentionLayer([_eye_head()])], {"final_norm": LN}, "a final norm but no pre-norms"),
    ([FFN], {"max_length": 4}, "pass max_len=4"),
])
def test_networks_outside_the_family_are_refused_by_layer_and_fix(layers, kwargs, match):
    net = Network(layers, labels=("a", "b"), **kwargs)
    with pytest.raises(NetworkError, match=match) as info:
        from_network(net, max_len=5 if kwargs.get("max_length") else None)
    assert "\n" not in str(info.value)


def test_token_loading_needs_a_bias_free_embedding():
    net = Network([FFN], labels=("a", "b"), embedding=np.ones((3, 2)), embedding_bias=np.ones(2))
    with pytest.raises(NetworkError, match="tokens=True needs an embedding and no embedding bias"):
        from_network(net, tokens=True)


def test_biases_choose_the_simplest_family_bias_that_holds_them():
    def rpe(*biases):
        return from_network(Network([AttentionLayer([_eye_head(position_bias=b) for b in biases])],
                                    labels=("a", "b")), max_len=4).cfg.rpe
    assert rpe(SlopeBias("lin", 0.5), None) == "lin"
    assert rpe(SlopeBias("log", 0.5), SlopeBias("log", 2.0)) == "log"
    assert rpe(SlopeBias("lin", 0.5), SlopeBias("log", 2.0)) == "free"
    assert rpe(SlopeBias("lin", -1.0)) == "free"
    assert rpe(RelativeBias(((1, 2.0),)), SlopeBias("lin", 1.0)) == "free"
    assert rpe(MatrixBias(np.ones((4, 4))), SlopeBias("lin", 1.0)) == "matrix"


def test_each_mixer_fixes_only_the_switches_it_reads_and_the_holders_are_disjoint():
    """Every field a mixer's load_switches returns is one it declares reading (or causality),
    and no network layer is held by two mixers, over the layers the round trips above build."""
    rng = np.random.default_rng(3)
    layers = []
    for _ in range(40):
        kwargs = _config(rng, {})
        layers += [layer for layer in to_network(Model(ModelConfig(**kwargs))).layers if layer.kind != "feedforward"]
    layers += [AttentionLayer([_dp_free(None)], normalization="hardmax"), AttentionLayer([_dp_free(None), _eye_head()])]
    for layer in layers:
        holders = [m for m in MIXERS.values() if m is not None and m.layer_kind == layer.kind and m.holds(layer)]
        assert len(holders) == 1, (layer, holders)
        fixed = holders[0].load_switches({holders[0]: [(0, layer)]})
        assert set(fixed) <= holders[0].switches | {"causal"}, (holders[0], set(fixed) - holders[0].switches)


def test_a_converted_construction_refuses_the_lengths_it_was_not_built_for():
    """from_network(reverse of 6) answered 2, 2, 2 for the 3 tokens 1, 2, 3 and sum of 4 answered 8 for
    1 + 2 + 3 (a fresh audit, 2026-11-28): the model refuses every length its network's claim does not
    cover, as evaluate does, and keeps them through to_network."""
    from expressivity import build_reverse, build_sum
    from expressivity.nn.convert import from_network, to_network

    for build, n, short in ((build_reverse, 6, 3), (build_sum, 4, 3)):
        net, _ = build(n)
        model = from_network(net)
        ok = model(torch.tensor(embed(net, np.arange(1.0, n + 1)))[None])
        assert ok.shape[1] == n
        with pytest.raises(ExpressivityError, match=f"input length {short} is not one the network was built for"):
            model(torch.tensor(embed(net, np.arange(1.0, short + 1)))[None])
        assert to_network(model).valid_lengths == net.valid_lengths


def test_a_trained_networks_summary_says_it_carries_no_claim():
    # A fresh audit (2026-11-29): print(to_network(model)) said "claim covers inputs: token ids 0..15" for a trained
    # model, where run says "claim: none: a trained model carries no proven claim"
    from expressivity.nn import Model, ModelConfig, to_network

    net = to_network(Model(ModelConfig(vocab_size=4, d_out=4, d_model=8, heads=2, layers=1, ffn_width=8, max_len=6)))
    assert net.trained
    text = str(net)
    assert net.input_domain is not None and "claim covers inputs" not in text
    assert "claim: none (a trained model); takes inputs: token ids 0..3" in text
