"""The model family: every (mixer, positional scheme) pair runs forward and backward; causality
holds; hybrid stacks build the mixers they name."""

import itertools

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.nn import MIXER_NAMES, RPE_NAMES, Model, ModelConfig

PE_SCHEMES = [("rpe", r) for r in RPE_NAMES] + [("ape", "sinusoidal"), ("ape", "learned"), ("rotary", True)]


def _applies(mixer: str, key: str, value) -> bool:
    """Whether a positional switch applies to a mixer (the config refuses it otherwise)."""
    if key == "rpe" and value != "none":
        return mixer in ("attention", "dpfree")
    return key != "rotary" or mixer == "attention"


@pytest.mark.parametrize("mixer,scheme", [(m, s) for m, s in itertools.product(MIXER_NAMES, PE_SCHEMES) if _applies(m, *s)])
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


@pytest.mark.parametrize("mixer,rpe", [(m, r) for m, r in itertools.product(MIXER_NAMES, ["none", "lin", "free"])
                                        if _applies(m, "rpe", r)])
def test_causal_models_do_not_look_ahead(mixer, rpe):
    torch.manual_seed(1)
    model = Model(ModelConfig(d_in=3, d_out=2, max_len=10, mixer=mixer, rpe=rpe, layers=2, heads=2, d_model=8, causal=True))
    x = torch.randn(2, 10, 3)
    x2 = x.clone()
    x2[:, 6:] = torch.randn(2, 4, 3)
    y, y2 = model(x), model(x2)
    assert torch.allclose(y[:, :6], y2[:, :6], atol=1e-6)
    assert not torch.allclose(y[:, 6:], y2[:, 6:])


def test_hybrid_stack_builds_the_mixers_it_names():
    cfg = ModelConfig(vocab_size=5, d_out=5, mixer=["sepconv", "none", "attention"], layers=3, d_model=8, heads=2)
    model = Model(cfg)
    assert [type(b.mixer).__name__ for b in model.blocks] == ["SepConv", "NoneType", "Attention"]
    assert model(torch.randint(0, 5, (2, 6))).shape == (2, 6, 5)


def test_models_with_position_tables_refuse_longer_inputs():
    for switch in (dict(ape="learned"), dict(mixer="bilinear"), dict(rpe="matrix")):
        model = Model(ModelConfig(d_in=1, max_len=4, heads=1, d_model=2, **switch))
        with pytest.raises(ExpressivityError, match="exceeds max_len 4"):
            model(torch.zeros(1, 5, 1))
    assert Model(ModelConfig(d_in=1, max_len=4, heads=1, d_model=2, rpe="free"))(torch.zeros(1, 5, 1)).shape == (1, 5, 1)


def test_a_model_refuses_inputs_of_the_wrong_shape_or_dtype_in_one_line():
    """An audit (2026-11-28): an unbatched (n, d_in) input was refused as "input length 2 is not one the network was
    built for", and a float32 input to a float64 model raised torch's "Input dtypes must be the same"."""
    values = Model(ModelConfig(d_in=2, d_out=1, d_model=8, heads=2, layers=1, ffn_width=8, max_len=8)).double()
    assert values(torch.zeros(3, 5, 2, dtype=torch.float64)).shape == (3, 5, 1)
    for x, needle in ((torch.zeros(5, 2, dtype=torch.float64), "add a batch axis"),
                      (torch.zeros(3, 5, 2), r"use x.to\(torch.float64\)"),
                      (torch.zeros(3, 5, 4, dtype=torch.float64), "d_in = 2"),
                      ([[0.0, 1.0]], "takes a torch.Tensor")):
        with pytest.raises(ExpressivityError, match=needle):
            values(x)
    tokens = Model(ModelConfig(vocab_size=5, d_out=5, d_model=8, heads=2, layers=1, ffn_width=8, max_len=8))
    assert tokens(torch.zeros(2, 4, dtype=torch.long)).shape == (2, 4, 5)
    with pytest.raises(ExpressivityError, match="token ids must be integers"):
        tokens(torch.zeros(2, 4))
    with pytest.raises(ExpressivityError, match=r"takes \(batch, n\)"):
        tokens(torch.zeros(4, dtype=torch.long))
