"""Softmax attention through torch's scaled_dot_product_attention (the "sdpa" kernel, the CUDA
default) against the explicit reference: the same outputs and gradients, to float32 round-off,
for every position bias, causal or not, rotary, a query bias, one model and an ensemble, rows
shorter and longer than the fused-softmax threshold; hardmax always computes explicitly."""

import pytest
import torch

from expressivity.nn import Model, ModelConfig
from expressivity.nn.positional import RPE_NAMES
from expressivity.training.step import set_attention_kernel

CASES = [dict(rpe=rpe, causal=causal) for rpe in RPE_NAMES for causal in (True, False)] + [
    dict(rpe="t5", rotary=True, causal=True), dict(rpe="none", q_bias=True, causal=False),
    dict(rpe="free", norm="pre", activation="gelu", causal=True)]


def pair(settings: dict, members):
    cfg = ModelConfig(d_in=3, d_out=2, max_len=20, layers=2, heads=2, d_model=8, ffn_width=8, **settings)
    torch.manual_seed(0)
    explicit = Model(cfg, members=members)
    fused = Model(cfg, members=members)
    fused.load_state_dict(explicit.state_dict())
    set_attention_kernel(fused, "sdpa")
    return explicit, fused


@pytest.mark.parametrize("members", [None, 3])
@pytest.mark.parametrize("n", [7, 20])
@pytest.mark.parametrize("settings", CASES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_sdpa_gives_the_explicit_outputs_and_gradients(settings, n, members):
    explicit, fused = pair(settings, members)
    x = torch.randn(*(() if members is None else (3,)), 4, n, 3)
    outs = []
    for model in (explicit, fused):
        out = model(x)
        (out ** 2).sum().backward()
        outs.append(out)
    assert torch.allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    for (name, a), b in zip(explicit.named_parameters(), fused.parameters()):
        assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6), name


def test_the_kernel_is_chosen_per_model_and_hardmax_stays_explicit():
    from expressivity.nn.mixers import Attention

    cfg = ModelConfig(d_in=2, d_out=2, max_len=8, heads=2, d_model=4, ffn_width=0, normalization="hardmax")
    torch.manual_seed(1)
    model = Model(cfg)
    x = torch.randn(2, 6, 2)
    before = model(x)
    set_attention_kernel(model, "sdpa")
    assert all(m.kernel == "sdpa" for m in model.modules() if isinstance(m, Attention))
    assert torch.equal(model(x), before)   # ties split evenly: the explicit hardmax, bit for bit
    assert Model(cfg).blocks[0].mixer.kernel == "explicit"   # other models keep the reference
