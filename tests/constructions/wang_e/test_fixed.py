"""Fixed memories (wang_e/fixed.py): the bound as the documented sum, the rounding estimate, the adversarial rows
reaching the worst case, and a check that fails past its bound.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import numpy as np
import pytest
from expressivity.errors import ExpressivityError


@pytest.mark.parametrize("readout", ["linear", "product", "sin-product"])
def test_fixed_bound_is_the_documented_sum(readout):
    """sup_error = L max_i l1_i + FFN error + L * rounding, on the box of radius 1 + max l1 + rounding."""
    from expressivity.constructions.wang_e.fixed import build_fixed_memory
    net, rep = build_fixed_memory((1, 3), readout=readout, width=16, grid=8)
    L, ffn = rep.bounds["lipschitz"], rep.bounds["ffn_error"]
    l1 = max(e.value for e in rep.errors if e.name.startswith("kernel_l1"))
    r = rep.margins["float64_rounding_estimate"]
    assert rep.margins["memory_radius"] == 1.0 + l1 + r
    assert rep.bounds["sup_error"] == pytest.approx(L * l1 + ffn + L * r, rel=1e-12)
    if readout == "linear":
        assert L == 1.0 and ffn == 0.0       # the mean of two memories: sum |w_i| = 1, exact ReLU pairs


def test_fixed_check_fails_at_twice_its_bound(monkeypatch):
    import expressivity.constructions.wang_e.fixed as fx
    net, rep = fx.build_fixed_memory((1, 3), readout="linear")
    bound = rep.bounds["sup_error"]
    orig = fx.forward
    monkeypatch.setattr(fx, "forward", lambda n, X: orig(n, X) + 2 * bound)
    r = fx.check_fixed_memory(net, rep, samples=4)
    assert not r.ok and r.checks[-1].failures == r.checks[-1].points


def test_fixed_rounding_estimate_is_H_maxc_2_to_minus_51():
    from expressivity.constructions.wang_e.fixed import build_fixed_memory
    net, rep = build_fixed_memory((1, 3))
    H, maxc = rep.constants["heads"], rep.constants["max_abs_weight"]
    assert rep.margins["float64_rounding_estimate"] == H * maxc * 2.0 ** -51


def test_fixed_lag_zero_is_refused():
    from expressivity.constructions.wang_e.fixed import parse_lags
    assert parse_lags("3,1") == (1, 3)
    with pytest.raises(ExpressivityError):
        parse_lags("0,3")


def test_fixed_adversarial_rows_reach_the_worst_case_at_the_last_position():
    """Linear readout (mean of 2 memories): the error at the last position t = L-1 is
    (1/2) sum_s x_{t-s} (e_1(s) + e_2(s)), e_i = rho_hat_i - delta_{T_i}; its largest value over
    x in [-1, 1]^L is (1/2) sum_s |e_1(s) + e_2(s)|, which one adversarial row must reach."""
    from expressivity.constructions.wang_e.fixed import adversarial_sequences, build_fixed_memory, target
    from expressivity.constructions.wang_e.kernels import head_weights
    from expressivity.network.reference import forward
    lags, L = (1, 3), 24
    net, rep = build_fixed_memory(lags, readout="linear")
    s = np.arange(L)
    layer = net.layers[0]
    e = [sum(h.W_O[0, net.labels.index(f"m[{T}]")] * head_weights(h.position_bias.kind, float(h.position_bias.beta), s)
             for h in layer.heads) - (s == T) for T in lags]
    worst = 0.5 * float(np.abs(e[0] + e[1]).sum())
    rows = adversarial_sequences(net, rep, L)
    got = np.abs(forward(net, rows[:, :, None])[..., 0] - target("linear", rows, lags))[:, -1].max()
    assert got == pytest.approx(worst, rel=1e-9, abs=1e-15)
