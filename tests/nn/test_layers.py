"""Native ensemble layers: K models in one module with a leading ensemble axis compute what each
model computes alone (to float32 round-off: batched kernels sum in another order), and a single
model is the same code with an axis of 1."""

import pytest
import torch

from expressivity.errors import NetworkError
from expressivity.nn import Model, ModelConfig, to_network
from expressivity.nn.layers import Embedding, LayerNorm, Linear

ARCHS = [
    dict(mixer="attention", rpe="t5", rotary=True, norm="pre", q_bias=True),
    dict(mixer="attention", rpe="matrix", ape="learned", normalization="hardmax"),
    dict(mixer="dpfree", rpe="log", learnable_slopes=True, dpfree_normaliser="infinite"),
    dict(mixer="dpfree", rpe="free", causal=False, ape="sinusoidal"),
    dict(mixer=("sepconv", "bilinear", "none"), layers=3, norm="pre", activation="gelu"),
]


def members(cfg, seeds):
    out = []
    for s in seeds:
        torch.manual_seed(s)
        out.append(Model(cfg))
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("tokens", [True, False])
def test_an_ensemble_computes_what_each_member_computes_alone(arch, tokens):
    cfg = ModelConfig(vocab_size=5 if tokens else 0, d_in=3, d_out=4, max_len=8, heads=2, d_model=8, ffn_width=8,
                      **{"layers": 1, **arch})
    singles = members(cfg, [0, 1, 2])
    ensemble = Model.stack(singles)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 5, (3, 4, 7), generator=g) if tokens else torch.randn(3, 4, 7, 3, generator=g)
    out = ensemble(x)
    assert out.shape == (3, 4, 7, 4)
    for k, model in enumerate(singles):
        assert torch.allclose(out[k], model(x[k]), atol=1e-5, rtol=1e-5)
    # gradients too: each member's gradient is its own model's
    out.square().sum().backward()
    for k, model in enumerate(singles):
        model(x[k]).square().sum().backward()
        for (name, p), (_, q) in zip(ensemble.named_parameters(), model.named_parameters()):
            if q.grad is None:   # the hardmax passes no gradient to queries and keys
                assert p.grad is None or not p.grad[k].any(), name
            else:
                assert torch.allclose(p.grad[k], q.grad, atol=1e-4, rtol=1e-4), name


@pytest.mark.parametrize("arch", ARCHS)
def test_stacking_copies_every_member_exactly_and_draws_nothing(arch):
    """Model.stack builds the ensemble without drawing initial values (every parameter is the
    members'): bit-equal slices, and the global generator where the last member left it."""
    cfg = ModelConfig(vocab_size=5, d_out=4, max_len=8, heads=2, d_model=8, ffn_width=8, **{"layers": 1, **arch})
    singles = members(cfg, [5, 6])
    state = torch.get_rng_state()
    ensemble = Model.stack(singles)
    assert torch.equal(torch.get_rng_state(), state)
    for name, p in ensemble.state_dict().items():
        for k, model in enumerate(singles):
            assert torch.equal(p[k], model.state_dict()[name]), name


def test_members_come_out_as_they_went_in():
    cfg = ModelConfig(vocab_size=5, d_out=2, heads=2, d_model=8, rpe="log", learnable_slopes=True, norm="pre")
    singles = members(cfg, [3, 4])
    ensemble = Model.stack(singles)
    assert ensemble.parameter_count() == singles[0].parameter_count()
    for k, model in enumerate(singles):
        back = ensemble.member(k)
        assert back.members is None
        assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), model.state_dict().values()))
    with pytest.raises(ValueError, match="one model"):
        singles[0].member(0)
    with pytest.raises(NetworkError, match="member"):
        to_network(ensemble)


def test_single_layers_keep_their_usual_shapes_and_torch_initialisation():
    torch.manual_seed(7)
    ours = Linear(3, 5)
    torch.manual_seed(7)
    theirs = torch.nn.Linear(3, 5)
    assert torch.equal(ours.weight, theirs.weight) and torch.equal(ours.bias, theirs.bias)
    x = torch.randn(2, 4, 3)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)
    torch.manual_seed(7)
    emb, ref = Embedding(6, 4), None
    torch.manual_seed(7)
    ref = torch.nn.Embedding(6, 4)
    ids = torch.tensor([[0, 5, 2]])
    assert torch.equal(emb(ids), ref(ids))
    norm, ref_norm = LayerNorm(4), torch.nn.LayerNorm(4)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(4.0)), ref_norm.weight.copy_(torch.arange(4.0))
        norm.bias.fill_(0.5), ref_norm.bias.fill_(0.5)
    h = torch.randn(2, 3, 4)
    assert torch.allclose(norm(h), ref_norm(h), atol=1e-6)
    assert Linear(3, 5, members=4).weight.shape == (4, 5, 3)


def test_an_ensemble_of_one_is_the_single_model():
    cfg = ModelConfig(vocab_size=5, d_out=2, heads=2, d_model=8, rpe="t5")
    (single,) = members(cfg, [0])
    one = Model.stack([single])
    x = torch.randint(0, 5, (3, 6))
    assert torch.equal(one(x[None])[0], single(x))


def test_building_without_initial_values_is_this_threads_only():
    """While one thread stacks an ensemble, a model built on another is initialised as usual."""
    import threading

    from expressivity.nn.layers import without_initial_values

    cfg = ModelConfig(d_in=2, d_out=2, heads=2, d_model=8, ffn_width=8)
    torch.manual_seed(7)
    expected = Model(cfg).state_dict()
    inside, built, other = threading.Event(), threading.Event(), {}

    def stack_side():
        with without_initial_values():
            inside.set()
            built.wait(timeout=30)

    def build_side():
        inside.wait(timeout=30)
        torch.manual_seed(7)
        other["state"] = Model(cfg).state_dict()
        built.set()

    threads = [threading.Thread(target=stack_side), threading.Thread(target=build_side)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(torch.equal(other["state"][name], value) for name, value in expected.items())


def _within_ulps(batched: torch.Tensor, alone: torch.Tensor, ulps: int = 8) -> None:
    """``batched`` equals ``alone`` to ``ulps`` float32 units of ``alone``'s largest entry."""
    tolerance = ulps * torch.finfo(alone.dtype).eps * alone.abs().max().item()
    torch.testing.assert_close(batched, alone, rtol=0, atol=tolerance)


@pytest.mark.parametrize("d_in, d_out", [(1, 8), (8, 1), (1, 1), (16, 1), (5, 3)])
def test_scalar_inputs_and_outputs_keep_members_within_rounding_of_single_models(d_in, d_out):
    """A scalar readout (d_out = 1) and a scalar input (d_in = 1) take their own products
    (:func:`expressivity.nn.layers.linear`): for one model the numbers of ``x W^T + b`` exactly,
    and member k of an ensemble its own model's to a few float32 ulps, forward and gradients.
    Bit for bit is not portable: whether MKL's batched kernel fuses the bias add or sums the
    gradient's rows in the single model's order depends on the CPU (bit for bit on the machine
    that wrote the products; 1-2 ulps apart, forward and gradients, on an AVX-512 Xeon)."""
    from expressivity.nn.layers import linear

    g = torch.Generator().manual_seed(d_in * 10 + d_out)
    K, rows = 4, 300
    flat = torch.randn(K, d_out * d_in + d_out + 3, generator=g)   # parameters are views of (K, P) rows in training
    weight = flat[:, :d_out * d_in].view(K, d_out, d_in).requires_grad_()
    bias = flat[:, d_out * d_in:d_out * d_in + d_out].requires_grad_()
    x = torch.randn(K, 2, rows // 2, d_in, generator=g)
    out = linear(x, weight, bias)
    out.square().sum().backward()
    for k in range(K):
        w1, b1 = weight[k].detach().clone().requires_grad_(), bias[k].detach().clone().requires_grad_()
        single = linear(x[k:k + 1], w1.unsqueeze(0), b1.unsqueeze(0))[0]
        plain = torch.baddbmm(b1.unsqueeze(0).unsqueeze(1), x[k].reshape(1, -1, d_in), w1.unsqueeze(0).transpose(1, 2))
        assert torch.equal(single, plain.view_as(single))
        if d_in == 1 or d_out == 1:   # the batched kernel of a general product may sum in another order
            _within_ulps(out[k], single)
            single.square().sum().backward()
            _within_ulps(weight.grad[k], w1.grad)
            _within_ulps(bias.grad[k], b1.grad)
        else:
            assert torch.allclose(out[k], single, atol=1e-5, rtol=1e-5)
