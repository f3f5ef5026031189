"""The model family: every (mixer, positional scheme) pair runs; mixers match their formulas;
causality holds; constructed Networks load and reproduce the reference forward pass."""

import itertools

import numpy as np
import pytest
import torch

from expressivity.errors import ExpressivityError, NetworkError
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, MatrixBias, PiecewiseLinear, RelativeBias
from expressivity.network.network import Network
from expressivity.network.reference import forward as reference_forward
from expressivity.nn import MIXER_NAMES, RPE_NAMES, Model, ModelConfig, from_network
from expressivity.nn.mixers import Bilinear, DPFree, SepConv

PE_SCHEMES = [("rpe", r) for r in RPE_NAMES] + [("ape", "sinusoidal"), ("ape", "learned"), ("rotary", True)]


@pytest.mark.parametrize("mixer,scheme", list(itertools.product(MIXER_NAMES, PE_SCHEMES)))
@pytest.mark.parametrize("causal", [True, False])
def test_every_mixer_positional_pair_runs_forward_and_backward(mixer, scheme, causal):
    key, value = scheme
    cfg = ModelConfig(vocab_size=7, d_out=5, max_len=12, mixer=mixer, layers=2, heads=2, d_model=8, ffn_width=8,
                      causal=causal, norm="pre", **{key: value})
    torch.manual_seed(0)
    model = Model(cfg)
    out = model(torch.randint(0, 7, (3, 10)))
    assert out.shape == (3, 10, 5) and torch.isfinite(out).all()
    out.square().mean().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("mixer", MIXER_NAMES)
@pytest.mark.parametrize("rpe", ["none", "lin", "free"])
def test_causal_models_do_not_look_ahead(mixer, rpe):
    torch.manual_seed(1)
    model = Model(ModelConfig(d_in=3, d_out=2, max_len=10, mixer=mixer, rpe=rpe, layers=2, heads=2, d_model=8, causal=True))
    x = torch.randn(2, 10, 3)
    x2 = x.clone()
    x2[:, 6:] = torch.randn(2, 4, 3)
    y, y2 = model(x), model(x2)
    assert torch.allclose(y[:, :6], y2[:, :6], atol=1e-6)
    assert not torch.allclose(y[:, 6:], y2[:, 6:])


def test_hybrid_stack_and_config_errors():
    cfg = ModelConfig(vocab_size=5, d_out=5, mixer=["sepconv", "sepconv", "attention"], layers=3, d_model=8, heads=2)
    model = Model(cfg)
    assert [type(b.mixer).__name__ for b in model.blocks] == ["SepConv", "SepConv", "Attention"]
    for bad in (dict(mixer="conv"), dict(rpe="alibi"), dict(ape="rope"), dict(norm="post"), dict(mixer=("attention",), layers=2),
                dict(d_model=10, heads=4), dict(ffn_width=-1), dict(layers=0)):
        with pytest.raises(ExpressivityError):
            ModelConfig(**bad)


def test_dpfree_is_a_convolution_with_the_softmaxed_bias_kernel():
    torch.manual_seed(2)
    cfg = ModelConfig(d_in=2, mixer="dpfree", rpe="log", learnable_slopes=True, heads=2, d_model=4)
    mixer = Model(cfg).blocks[0].mixer
    assert isinstance(mixer, DPFree)
    n = 6
    x = torch.randn(1, n, 4)
    beta = mixer.bias.beta
    v = mixer.v(x).view(1, n, 2, 2)
    expected = torch.zeros(1, n, 2, 2)
    for h in range(2):
        w = torch.exp(-beta[h] * torch.log1p(torch.arange(n, dtype=torch.float32)))
        w = w / w.sum()  # normalised over the window: the zero-padded past
        for t in range(n):
            for s in range(t + 1):
                expected[0, t, h] += w[s] * v[0, t - s, h]
    assert torch.allclose(mixer(x), mixer.o(expected.reshape(1, n, 4)), atol=1e-5)


def test_dpfree_bidirectional_kernel_covers_both_sides():
    torch.manual_seed(3)
    mixer = DPFree(d=2, heads=1, d_head=2, causal=False, bias=None)
    x = torch.randn(1, 5, 2)
    # no bias: uniform weight 1/(2n-1) over all offsets, so every position sums all tokens / 9
    expected = mixer.o(mixer.v(x).sum(1, keepdim=True).expand(1, 5, 2) / 9)
    assert torch.allclose(mixer(x), expected, atol=1e-6)


def test_bilinear_and_sepconv_match_their_formulas():
    torch.manual_seed(4)
    n, d = 5, 3
    x = torch.randn(2, n, d)
    bl = Bilinear(d, max_len=8, causal=True)
    P = bl.P[:n, :n].tril()
    # paper: W_O X W_P with tokens as columns; rows: P X O
    expected = torch.stack([(bl.o.weight @ x[b].T @ P.T).T for b in range(2)])
    assert torch.allclose(bl(x), expected, atol=1e-5)
    sc = SepConv(d, kernel_size=3, causal=True)
    W = sc.filters[:, 0]  # (d, k); out[t, c] = sum_u W[c, u] x[t - (k-1) + u, c]
    conv = torch.zeros(2, n, d)
    for t in range(n):
        for u in range(3):
            src = t - 2 + u
            if src >= 0:
                conv[:, t] += W[:, u] * x[:, src]
    assert torch.allclose(sc(x), sc.o(conv), atol=1e-5)


def small_network(causal=True, with_pe=False):
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
def test_network_loads_and_matches_reference_forward(causal, with_pe):
    net = small_network(causal, with_pe)
    X = np.random.default_rng(1).normal(size=(4, 6, 3))
    model = from_network(net, max_len=8)
    got = model(torch.tensor(X)).detach().numpy()
    assert np.abs(got - reference_forward(net, X)).max() < 1e-10
    assert model.cfg.layers == 3  # (ffn-only), (attn+ffn-less), (attn+ffn)


def test_loader_refuses_networks_outside_the_family():
    d = 2
    eye = np.eye(d)
    head = Head(eye, eye, eye, eye)
    with pytest.raises(NetworkError, match="hardmax"):
        from_network(Network([AttentionLayer([head], normalization="hardmax")], labels=("a", "b")))
    pl = PiecewiseLinear((0.0,), (0.0, 1.0), (0.0, 0.0))
    with pytest.raises(NetworkError, match="piecewise"):
        from_network(Network([FeedForwardLayer(eye, np.zeros(d), eye, activation=pl)], labels=("a", "b")))
    mb = Head(eye, eye, eye, eye, position_bias=MatrixBias(np.zeros((3, 3))))
    with pytest.raises(NetworkError, match="full-matrix"):
        from_network(Network([AttentionLayer([mb])], labels=("a", "b")))
    with pytest.raises(NetworkError, match="mix causal"):
        from_network(Network([AttentionLayer([head], causal=True), AttentionLayer([head])], labels=("a", "b")))
