"""Each token mixer against its formula."""

import math

import numpy as np
import pytest
import torch

from expressivity.errors import NetworkError
from expressivity.network import AttentionLayer, Head, MixingHead, MixingLayer, Network
from expressivity.nn import MIXERS, Model, ModelConfig, from_network, to_network
from expressivity.nn.layers import Linear
from expressivity.nn.mixers import Attention, Bilinear, DPFree, SepConv
from expressivity.nn.mixers.base import FUSED_SOFTMAX_FROM, Footprint, Mixer, softmax, to_numpy
from expressivity.tasks.memory import KernelMemory


def test_dpfree_visible_is_the_softmax_of_the_bias_over_the_keys_each_query_sees():
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
        for t in range(n):
            for s in range(t + 1):
                expected[0, t, h] += w[s] / w[: t + 1].sum() * v[0, t - s, h]
    assert torch.allclose(mixer(x), mixer.o(expected.reshape(1, n, 4)), atol=1e-5)


def test_dpfree_bidirectional_without_bias_averages_every_token():
    torch.manual_seed(3)
    mixer = DPFree(d=2, heads=1, d_head=2, causal=False, bias=None)
    x = torch.randn(1, 5, 2)
    expected = mixer.o(mixer.v(x).mean(1, keepdim=True).expand(1, 5, 2))
    assert torch.allclose(mixer(x), expected, atol=1e-6)


@pytest.mark.parametrize("kernel, rpe", [("power", "log"), ("exp", "lin")])
@pytest.mark.parametrize("alpha", [0.3, 1.5])
def test_dpfree_over_an_infinite_past_reproduces_the_kernel_memory_kernel(kernel, rpe, alpha):
    """rho(s) = (1+s)^-(1+a) / zeta(1+a) (power) or (1-e^-a) e^-as (exp), on a zero-padded past."""
    task = KernelMemory(length=32, kernel=kernel, alpha=alpha)
    cfg = ModelConfig(d_in=1, mixer="dpfree", rpe=rpe, dpfree_normaliser="infinite", heads=1, d_model=1, ffn_width=0,
                      max_len=32)
    model = Model(cfg).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.ones_like(p)) if p.dim() > 1 else p.zero_()
        model.blocks[0].mixer.bias.log_beta.fill_(math.log(alpha))   # beta = 1 + alpha (log), alpha (lin)
    K = model.blocks[0].mixer.kernel(32)[0]
    assert torch.max(torch.abs(K - task.kernel_matrix())).item() < 1e-12
    x = task.sample(4, None, torch.Generator().manual_seed(0)).x.double()   # (batch, n, 1)
    assert torch.max(torch.abs(model(x) - (x + task.kernel_matrix() @ x))).item() < 1e-12   # residual + kernel memory


@pytest.mark.parametrize("members", [None, 3])
@pytest.mark.parametrize("rpe", ["log", "lin"])
def test_the_infinite_past_kernel_is_the_exponential_of_the_bias_over_its_mass_bit_for_bit(members, rpe):
    """The kernel is computed on the 2n - 1 offsets and spread (it depends on i - j alone): the
    same numbers as exp(B) / Z_inf over the (n, n) grid, masked to the past, and the same gradient
    up to the order of its sums."""
    cfg = ModelConfig(d_in=1, mixer="dpfree", rpe=rpe, learnable_slopes=True, dpfree_normaliser="infinite", heads=2,
                      d_model=4, ffn_width=0, max_len=200)
    torch.manual_seed(3)
    mixer = Model(cfg, members=members).blocks[0].mixer
    with torch.no_grad():
        mixer.bias.log_beta.add_(torch.randn_like(mixer.bias.log_beta))
    for n in (1, 2, 7, 64, 200):
        kernel = mixer.kernel(n)
        grid = mixer.bias(n)
        mass = mixer.bias.infinite_mass()[..., None, None]
        expected = torch.where(torch.ones(n, n, dtype=torch.bool).tril(), grid.exp(), 0.0) / mass
        assert kernel.shape == expected.shape and torch.equal(kernel, expected)
        weights = torch.randn(kernel.shape, generator=torch.Generator().manual_seed(n))
        (ours,) = torch.autograd.grad((kernel * weights).sum(), mixer.bias.log_beta)
        (theirs,) = torch.autograd.grad((expected * weights).sum(), mixer.bias.log_beta)
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_hardmax_attention_splits_ties_evenly():
    att = Attention(d=2, heads=1, d_head=1, causal=False, bias=None, rotary=False, scale=1.0, hardmax=True).double()
    with torch.no_grad():
        att.q.weight.zero_()
        att.k.weight.copy_(torch.tensor([[1.0, 0.0]]))
        att.v.weight.copy_(torch.tensor([[0.0, 1.0]]))
        att.o.weight.copy_(torch.tensor([[0.0], [1.0]]))
    # constant zero query: every score 0, so weights 1/3 each; then keys x: scores follow x[0]
    x = torch.tensor([[[3.0, 1.0], [1.0, 100.0], [3.0, 4.0]]], dtype=torch.float64)
    assert att(x)[0, :, 1].tolist() == [35.0, 35.0, 35.0]
    with torch.no_grad():
        att.q.bias = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    assert att(x)[0, :, 1].tolist() == [2.5, 2.5, 2.5]   # tokens 0 and 2 tie at the max key 3


@pytest.mark.parametrize("causal", [True, False])
def test_bilinear_and_sepconv_match_their_formulas(causal):
    torch.manual_seed(4)
    n, d, k = 5, 3, 4
    x = torch.randn(2, n, d)
    bl = Bilinear(d, max_len=8, causal=causal)
    P = bl.P[:n, :n].tril() if causal else bl.P[:n, :n]
    # paper: W_O X W_P with tokens as columns; rows: P X O
    expected = torch.stack([(bl.o.weight @ x[b].T @ P.T).T for b in range(2)])
    assert torch.allclose(bl(x), expected, atol=1e-5)
    sc = SepConv(d, kernel_size=k, causal=causal)
    left = k - 1 if causal else (k - 1) // 2
    W = sc.filters[:, 0]  # (d, k); out[t, c] = sum_u W[c, u] x[t - left + u, c]
    conv = torch.zeros(2, n, d)
    for t in range(n):
        for u in range(k):
            if 0 <= t - left + u < n:
                conv[:, t] += W[:, u] * x[:, t - left + u]
    assert torch.allclose(sc(x), sc.o(conv), atol=1e-5)


# ---- what each mixer declares ------------------------------------------------------------------

# every position bias with the mixers that read one; every other mixer of the table (a new one
# included, with no edit here) causal and bidirectional
_BIASED = tuple(m for m, c in MIXERS.items() if c is not None and "rpe" in c.switches)
FACT_CONFIGS = [dict(mixer=m, rpe=r, learnable_slopes=r in ("lin", "log") and m == "attention", q_bias=m == "attention",
                     causal=c, d_head=d_head)
                for m in _BIASED for r in ("none", "t5", "lin", "log", "free", "matrix")
                for c in (True, False) for d_head in (None, 3)] + \
               [dict(mixer=m, causal=c) for m, cls in MIXERS.items() if cls is not None and m not in _BIASED
                for c in (True, False)]


@pytest.mark.parametrize("arch", FACT_CONFIGS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_each_mixer_declares_its_parameters_heads_and_length_limit_truly(arch):
    from expressivity.network.layers import head_count
    from expressivity.nn import MIXERS, to_network

    cfg = ModelConfig(vocab_size=0, d_in=2, max_len=9, heads=2, d_model=6, conv_kernel=4, layers=1, **arch)
    kind = MIXERS[arch["mixer"]]
    mixer = Model(cfg).blocks[0].mixer
    assert kind.parameter_count(cfg) == sum(p.numel() for p in mixer.parameters())
    assert kind.head_count(cfg) == head_count([mixer.to_layer(None)])
    assert mixer.to_layer(None).kind == kind.layer_kind
    model = Model(cfg)
    x = torch.randn(1, 10, 2)
    if kind.length_limited(cfg):
        with pytest.raises(Exception, match="max_len"):
            model(x)
    else:
        assert model(x).shape == (1, 10, 1)
    assert to_network(model).layers[0].kind == kind.layer_kind


def _formula_flops(cfg, n: int) -> int:
    """The FLOPs formula the language-model claims used before each mixer declared its own (by
    mixer name): an independent statement of the same facts."""
    d, hm, w = cfg.d_model, cfg.heads * cfg.head_dim, cfg.ffn_width
    c = (n + 1) / 2 if cfg.causal else n
    per = {"attention": 2 * d * 3 * hm + 2 * hm * d + 4 * hm * c, "dpfree": 4 * d * hm + 2 * hm * c,
           "bilinear": 2 * c * d + 2 * d * d, "sepconv": 2 * cfg.conv_kernel * d + 2 * d * d, "none": 0}
    return int(round(sum(per[m] for m in cfg.layer_mixers()) + cfg.layers * 4 * d * w + 2 * d * cfg.d_out))


# the mixers the formula above states (a new mixer's counts are still checked below)
_FORMULA_MIXERS = ("attention", "dpfree", "bilinear", "sepconv")


def _counted_non_embedding(cfg) -> int:
    with torch.device("meta"):
        model = Model(cfg)
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith(("embed.", "ape.", "readout.")))


@pytest.mark.parametrize("arch", FACT_CONFIGS[::5], ids=lambda a: "-".join(str(v) for v in a.values()))
@pytest.mark.parametrize("n", [1, 16, 33])
def test_the_models_flops_and_counts_are_its_parts_and_match_the_formula(arch, n):
    from expressivity.nn.model import flops_per_token, parameter_count

    for layers, ffn in ((1, 0), (3, 24)):
        mixers = (arch["mixer"], "none", arch["mixer"])[:layers] if layers == 3 else arch["mixer"]
        cfg = ModelConfig(vocab_size=7, d_out=7, max_len=40, heads=2, d_model=6, conv_kernel=4, ffn_width=ffn,
                          layers=layers, norm="pre" if ffn else "none", ape="learned",
                          **{**arch, "mixer": mixers})
        if arch["mixer"] in _FORMULA_MIXERS:
            assert flops_per_token(cfg, n) == _formula_flops(cfg, n)
        assert parameter_count(cfg, embeddings=False) == _counted_non_embedding(cfg)
        assert parameter_count(cfg) == Model(cfg).parameter_count()


def test_a_new_mixer_is_one_class_and_one_table_entry(monkeypatch):
    """A mixer that adds the previous token's vector through W_O: one class here, one entry in
    MIXERS; the model, its facts, the conversion to a Network and training then take it."""
    from expressivity.network import reference
    from expressivity.nn.model import flops_per_token, head_count, length_limit
    from expressivity.training import RunConfig, run

    monkeypatch.setitem(MIXERS, "previous", _Previous)
    cfg = ModelConfig(d_in=2, d_out=2, d_model=4, mixer=("previous", "attention"), layers=2, heads=2, ffn_width=4)
    assert head_count(cfg) == 3 and length_limit(cfg) is None and flops_per_token(cfg, 8) > 0
    model = Model(cfg)
    x = torch.randn(3, 5, 2)
    net = to_network(model)
    assert np.allclose(reference.forward(net, x.double().numpy()), model(x).detach().double().numpy(), atol=1e-5)
    result = run(RunConfig.for_task("reverse", {"length": 4, "vocab": 4},
                                    dict(mixer=("previous", "attention"), layers=2, heads=2, d_model=8, ffn_width=8),
                                    dict(steps=3, batch_size=4, eval_every=3, eval_size=8)))
    assert result.status == "done"


def _taps(d, left):
    """A width-2 convolution kernel ``(2, d)`` reading position ``i - 1`` (``left=1``) or ``i + 1`` (``left=0``)."""
    return np.stack([np.ones(d), np.zeros(d)]) if left == 1 else np.stack([np.zeros(d), np.ones(d)])


class _Previous(Mixer):
    """A mixer the family lacks: the previous token's vector through ``W_O``."""

    layer_kind = "mixing"

    def __init__(self, d, members=None):
        super().__init__(members)
        self.o = Linear(d, d, bias=False, members=members)

    @classmethod
    def from_config(cls, cfg, members=None):
        return cls(cfg.d_model, members)

    @staticmethod
    def parameter_count(cfg):
        return cfg.d_model**2

    @staticmethod
    def flops_per_token(cfg, n):
        return 2 * cfg.d_model**2

    @staticmethod
    def activations(cfg, n):
        return Footprint(2 * n * cfg.d_model, 2 * n * cfg.d_model, 0)   # the shifted input and W_O's input

    def run(self, x):
        return self.o.run(torch.nn.functional.pad(x, (0, 0, 1, 0))[:, :, :-1])

    def to_layer(self, norm, name=""):
        d = self.o.weight.shape[0]
        return MixingLayer((MixingHead(np.eye(d), to_numpy(self.o.weight).T, kernel=_taps(d, 1), left=1),), name, norm)


class _PrevNext(_Previous):
    """The previous and the next token's vectors, each through its own ``W_O`` (``o``, ``next``):
    a mixing layer of two width-2 convolution heads, which no built-in mixer holds, and one that
    says which network layers it holds, so it loads."""

    holds_what = "a previous-token and a next-token head"

    def __init__(self, d, members=None):
        super().__init__(d, members)
        self.next = Linear(d, d, bias=False, members=members)

    @staticmethod
    def parameter_count(cfg):
        return 2 * cfg.d_model**2

    @staticmethod
    def flops_per_token(cfg, n):
        return 4 * cfg.d_model**2

    def run(self, x):
        return super().run(x) + self.next.run(torch.nn.functional.pad(x, (0, 0, 0, 1))[:, :, 1:])

    def to_layer(self, norm, name=""):
        d = self.o.weight.shape[0]
        heads = tuple(MixingHead(np.eye(d), to_numpy(w.weight).T, kernel=_taps(d, left), left=left)
                      for w, left in ((self.o, 1), (self.next, 0)))
        return MixingLayer(heads, name, norm)

    @classmethod
    def holds(cls, layer):
        heads = layer.heads
        return (len(heads) == 2 and [h.left for h in heads] == [1, 0]
                and all(h.matrix is None and np.array_equal(h.W_V, np.eye(h.d)) and np.array_equal(h.kernel, _taps(h.d, h.left))
                        for h in heads))

    @classmethod
    def looks_causal(cls, layer):
        return False

    @classmethod
    def check_loadable(cls, layer, causal, where):
        if causal:
            raise NetworkError(f"{where}: reads the next token in a causal model")

    def load_layer(self, layer):
        for w, head in zip((self.o, self.next), layer.heads):
            w.weight.copy_(torch.tensor(head.W_O.T, dtype=w.weight.dtype))


def test_the_loader_takes_a_new_mixer_from_its_class_and_table_entry(monkeypatch):
    """from_network knows no mixer by name: a new class in MIXERS holds its layers, fixes
    causality through looks_causal and refuses what does not fit through check_loadable."""
    from expressivity.network.reference import forward

    monkeypatch.setitem(MIXERS, "prevnext", _PrevNext)
    cfg = ModelConfig(d_in=2, d_out=2, d_model=4, mixer=("prevnext", "sepconv"), layers=2, ffn_width=4, causal=False,
                      conv_kernel=3)
    model = Model(cfg).double()
    net = to_network(model)
    back = from_network(net)
    assert back.cfg.layer_mixers() == ("prevnext", "sepconv") and back.cfg.causal is False and back.cfg.conv_kernel == 3
    x = torch.randn(3, 6, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(back(x), model(x), atol=1e-12)
        assert np.allclose(back(x).numpy(), forward(net, x.numpy()), atol=1e-10)
    causal = Network((net.layers[0], AttentionLayer([Head(*(np.eye(4),) * 4)], causal=True)), labels=tuple(net.labels))
    with pytest.raises(NetworkError, match="layer 0: reads the next token in a causal model"):
        from_network(causal)
    shrunk = Network((MixingLayer(net.layers[0].heads[:1] * 3),), labels=tuple(net.labels))
    with pytest.raises(NetworkError, match=r"a mixing layer of 3 heads does not load; the family's mixing mixers hold ") as err:
        from_network(shrunk)
    # every mixing mixer of the table is named with what it holds, the new one included
    for name, mixer in MIXERS.items():
        if mixer is not None and mixer.layer_kind == "mixing":
            assert f"{mixer.holds_what} ({name})" in str(err.value), name
    assert "a previous-token and a next-token head (prevnext)" in str(err.value)


class _PreviousValue(_Previous):
    """The previous token read through its own ``W_V``, then ``W_O``: one width-2 convolution
    head with any ``W_V``, the shape of layer sepconv also loads when ``W_V = I``."""

    holds_what = "one previous-token head through W_V"

    def __init__(self, d, members=None):
        super().__init__(d, members)
        self.v = Linear(d, d, bias=False, members=members)

    @staticmethod
    def parameter_count(cfg):
        return 2 * cfg.d_model**2

    def run(self, x):
        return super().run(self.v.run(x))

    def to_layer(self, norm, name=""):
        d = self.o.weight.shape[0]
        head = MixingHead(to_numpy(self.v.weight).T, to_numpy(self.o.weight).T, kernel=_taps(d, 1), left=1)
        return MixingLayer((head,), name, norm)

    @classmethod
    def holds(cls, layer):
        return (len(layer.heads) == 1 and layer.heads[0].kernel is not None and layer.heads[0].left == 1
                and np.array_equal(layer.heads[0].kernel, _taps(layer.heads[0].d, 1)))

    def load_layer(self, layer):
        (head,) = layer.heads
        for w, value in ((self.v, head.W_V), (self.o, head.W_O)):
            w.weight.copy_(torch.tensor(value.T, dtype=w.weight.dtype))


def test_a_new_convolution_mixer_after_sepconv_loads_its_own_layers(monkeypatch):
    """sepconv holds only the convolutions it can copy in (W_V = I), so a later mixer of the
    table whose convolution reads X @ W_V gets its layers back; a layer both represent loads
    into the first of the table, computing the same function."""
    monkeypatch.setitem(MIXERS, "prevvalue", _PreviousValue)
    cfg = ModelConfig(d_in=2, d_out=2, d_model=4, mixer=("prevvalue", "sepconv"), layers=2, ffn_width=4, causal=True,
                      conv_kernel=2)
    model = Model(cfg).double()
    net = to_network(model)
    assert not SepConv.holds(net.layers[0]) and _PreviousValue.holds(net.layers[0])
    back = from_network(net)
    assert back.cfg.layer_mixers() == ("prevvalue", "sepconv")
    x = torch.randn(3, 6, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(back(x), model(x), atol=1e-12)
        model.blocks[0].mixer.v.weight.copy_(torch.eye(4, dtype=torch.float64))   # now sepconv represents it too
    both = to_network(model)
    assert SepConv.holds(both.layers[0]) and _PreviousValue.holds(both.layers[0])
    again = from_network(both)
    assert again.cfg.layer_mixers() == ("sepconv", "sepconv")
    with torch.no_grad():
        assert torch.allclose(again(x), model(x), atol=1e-12)


@pytest.mark.parametrize("n", [8, FUSED_SOFTMAX_FROM - 1, FUSED_SOFTMAX_FROM, 40])
def test_softmax_on_either_side_of_the_fused_kernel_threshold(n):
    # rows shorter than FUSED_SOFTMAX_FROM are spelled out, longer ones use torch's kernel: both
    # are the softmax (values and gradients) to float32 round-off, masked keys included
    torch.manual_seed(n)
    scores = (torch.randn(3, 2, n, n, dtype=torch.float64) * 4).masked_fill(
        ~torch.ones(n, n, dtype=torch.bool).tril(), -math.inf)
    weights = torch.randn(3, 2, n, n, dtype=torch.float64)
    got_in = scores.float().requires_grad_(True)
    got = softmax(got_in)
    (got * weights.float()).sum().backward()
    want_in = scores.clone().requires_grad_(True)
    want = torch.exp(want_in - want_in.amax(-1, keepdim=True))
    want = want / want.sum(-1, keepdim=True)
    (want * weights).sum().backward()
    assert torch.allclose(got.double(), want, rtol=1e-6, atol=1e-7)
    assert torch.allclose(got_in.grad.double(), want_in.grad, rtol=1e-5, atol=1e-6)
    assert (got[..., 0, 1:] == 0).all()   # masked keys get exactly 0
