"""Every positional scheme against its formula."""

import math

import numpy as np
import pytest
import torch

from expressivity.nn.positional import (RPE_NAMES, FreeBias, MatrixBias, Rotary, SlopeBias, T5Bias, alibi_slopes,
                                        make_relative_bias, sinusoidal_table, t5_bucket)


def spec_t5_causal(n: int) -> int:
    """wang_e_2024.md §1.3: 32 buckets, max distance 128, distance n = i - j >= 0."""
    return n if n < 16 else min(31, 16 + math.floor(math.log(n / 16) / math.log(8) * 16))


def hf_t5_bidirectional(rel: int) -> int:
    """Mesh-TF/HF formula, relative_position = key - query, bidirectional, 32 buckets, 128."""
    nb, ret = 16, 0
    if rel > 0:
        ret += nb
    n = abs(rel)
    if n < 8:
        return ret + n
    return ret + min(nb - 1, 8 + int(math.log(n / 8) / math.log(128 / 8) * (nb - 8)))


def test_t5_bucket_causal_matches_spec_formula():
    offsets = torch.arange(0, 600)
    got = t5_bucket(offsets, causal=True)
    assert got.tolist() == [spec_t5_causal(int(s)) for s in offsets]
    assert t5_bucket(torch.tensor([-3, -50]), causal=True).tolist() == [0, 0]  # future keys: bucket 0 (masked anyway)


def test_t5_bucket_bidirectional_matches_reference():
    offsets = torch.arange(-300, 301)
    got = t5_bucket(offsets, causal=False)
    assert got.tolist() == [hf_t5_bidirectional(-int(r)) for r in offsets]


def test_t5_bias_reads_its_table_by_bucket():
    b = T5Bias(heads=2, causal=True)
    with torch.no_grad():
        b.table.copy_(torch.arange(64, dtype=torch.float32).view(2, 32))
    B = b(40)
    i, j = 39, 0
    assert B[1, i, j].item() == 32 + spec_t5_causal(39)
    assert B[0, 5, 2].item() == 3


@pytest.mark.parametrize("causal", [True, False])
def test_alibi_bias_is_minus_slope_times_distance(causal):
    H, n = 4, 7
    b = SlopeBias(H, causal, "lin", learnable=False)
    slopes = [2 ** (-8 * h / H) for h in range(1, H + 1)]
    assert alibi_slopes(H).tolist() == pytest.approx(slopes)
    B = b(n)
    for h in range(H):
        for i in range(n):
            for j in range(n):
                s = max(i - j, 0) if causal else abs(i - j)
                assert B[h, i, j].item() == pytest.approx(-slopes[h] * s, rel=1e-6, abs=1e-7)


def test_log_bias_is_minus_beta_log_one_plus_distance_and_slopes_learn():
    b = SlopeBias(2, True, "log", learnable=True)
    with torch.no_grad():
        b.log_beta.copy_(torch.log(torch.tensor([1.5, 0.25])))
    B = b(6)
    for h, beta in enumerate([1.5, 0.25]):
        for s in range(6):
            assert B[h, 5, 5 - s].item() == pytest.approx(-beta * math.log(1 + s), rel=1e-6, abs=1e-7)
    B.sum().backward()
    assert b.log_beta.grad is not None and torch.all(b.log_beta.grad != 0)
    fixed = SlopeBias(2, True, "log", learnable=False)
    assert not any(p.requires_grad for p in fixed.parameters())


def test_free_bias_is_a_per_offset_table():
    b = FreeBias(heads=1, causal=False, max_len=4)
    with torch.no_grad():
        b.table.copy_(torch.arange(7, dtype=torch.float32)[None])  # offsets -3..3 -> 0..6
    B = b(4)
    for i in range(4):
        for j in range(4):
            assert B[0, i, j].item() == (i - j) + 3
    assert b.by_offset(torch.tensor([10, -10])).tolist() == [[6.0, 0.0]]  # clamped beyond max_len


def test_bias_interface_is_a_function_of_offset_only():
    for b in (T5Bias(3, False), SlopeBias(3, False, "lin", True), SlopeBias(3, False, "log", True), FreeBias(3, False, 16)):
        for p in b.parameters():
            torch.nn.init.normal_(p)
        B = b(9)
        assert B.shape == (3, 9, 9)
        for k in range(-8, 9):
            diag = torch.diagonal(B, offset=-k, dim1=1, dim2=2)
            assert torch.allclose(diag, diag[:, :1].expand_as(diag))
        # entry (i, j) is the bias at offset i - j, exactly; at every length down to one token
        for n in (1, 2, 9):
            grid = torch.arange(n)[:, None] - torch.arange(n)[None, :]
            assert torch.equal(b(n), b.by_offset(grid.reshape(-1)).reshape(3, n, n))


def test_an_ensemble_bias_is_each_members_bias_and_its_gradient_sums_each_diagonal():
    torch.manual_seed(1)
    b = FreeBias(2, False, 6, members=3)
    with torch.no_grad():
        b.table.normal_()
    B = b(5)
    assert B.shape == (3, 2, 5, 5)
    grid = (torch.arange(5)[:, None] - torch.arange(5)[None, :]).reshape(-1)
    assert torch.equal(B, b.by_offset(grid).reshape(3, 2, 5, 5))
    weights = torch.randn(3, 2, 5, 5, dtype=torch.float64)
    (B.double() * weights).sum().backward()
    # d/d table[offset] = the sum of the weights on the diagonal i - j = offset (float64 reference)
    for offset in range(-4, 5):
        want = torch.diagonal(weights, offset=-offset, dim1=2, dim2=3).sum(-1)
        assert torch.allclose(b.table.grad[..., offset + 5].double(), want, rtol=1e-6, atol=1e-6)


def test_rpe_table_builds_each_bias_from_a_config():
    from expressivity.nn import ModelConfig

    built = {name: make_relative_bias(ModelConfig(rpe=name, heads=2, d_model=4, max_len=6)) for name in RPE_NAMES}
    assert built["none"] is None
    assert {name: type(b).__name__ for name, b in built.items() if b is not None} == {
        "t5": "T5Bias", "lin": "SlopeBias", "log": "SlopeBias", "free": "FreeBias", "matrix": "MatrixBias"}
    assert all(b(5).shape == (2, 5, 5) for b in built.values() if b is not None)


@pytest.mark.parametrize("bias", [T5Bias(2, True), T5Bias(2, False), FreeBias(2, True, 5), FreeBias(2, False, 5),
                                  SlopeBias(2, False, "lin", True), SlopeBias(2, True, "log", True)])
def test_relative_biases_become_network_biases_equal_at_every_offset(bias):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in bias.parameters():
            p.normal_()
    n = 300   # beyond T5's max distance and the free table: the network bias's defaults take over
    B = bias(n).double()
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for h in range(2):
        net_B = torch.as_tensor(bias.to_network(h).matrix(n))
        same = torch.isclose(net_B, B[h], rtol=1e-6, atol=0)
        # a slope bias is |i - j| in the network; a causal model never reads its future half
        assert bool(same[causal].all()) if bias.causal and isinstance(bias, SlopeBias) else bool(same.all())


def test_slope_bias_with_a_floor_keeps_beta_above_it_and_has_the_closed_form_mass():
    b = SlopeBias(2, True, "log", learnable=True, beta_min=1.0)
    with torch.no_grad():
        b.log_beta.copy_(torch.tensor([-10.0, 0.0]))
    assert torch.all(b.beta > 1) and b.beta[1].item() == pytest.approx(2.0)
    assert b.infinite_mass()[1].item() == pytest.approx(math.pi**2 / 6, rel=1e-6)
    lin = SlopeBias(1, True, "lin", learnable=False)
    assert lin.infinite_mass().item() == pytest.approx(1 / (1 - math.exp(-lin.beta.item())), rel=1e-6)


def test_matrix_bias_is_a_table_per_head_cut_to_the_length():
    b = MatrixBias(heads=2, max_len=4)
    with torch.no_grad():
        b.table.copy_(torch.arange(32.0).view(2, 4, 4))
    assert b(3).tolist() == b.table[:, :3, :3].tolist()
    assert np.array_equal(b.to_network(1).values, b.table[1].detach().double().numpy())


def test_sinusoidal_table_formula():
    pe = sinusoidal_table(10, 6)
    for p in range(10):
        for i in range(3):
            w = 1 / 10000 ** (2 * i / 6)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(p * w), abs=1e-6)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(p * w), abs=1e-6)


def test_rotary_rotates_pairs_and_scores_depend_on_offset_only():
    m = 4
    rot = Rotary(m)
    x = torch.randn(1, 5, m)
    y = rot(x)
    for p in range(5):
        for k in range(m // 2):
            a = p * 10000 ** (-2 * k / m)
            x1, x2 = x[0, p, k].item(), x[0, p, k + m // 2].item()
            assert y[0, p, k].item() == pytest.approx(x1 * math.cos(a) - x2 * math.sin(a), abs=1e-5)
            assert y[0, p, k + m // 2].item() == pytest.approx(x1 * math.sin(a) + x2 * math.cos(a), abs=1e-5)
    q, k = torch.randn(m), torch.randn(m)
    seq_q, seq_k = q.expand(8, m)[None], k.expand(8, m)[None]
    S = rot(seq_q)[0] @ rot(seq_k)[0].T
    for off in range(-3, 4):
        d = torch.diagonal(S, offset=off)
        assert torch.allclose(d, d[:1].expand_as(d), atol=1e-5)


def test_learned_absolute_encoding_is_added_to_the_embedding():
    from expressivity.nn import Model, ModelConfig

    model = Model(ModelConfig(d_in=2, d_out=2, max_len=6, ape="learned", layers=1, heads=1, d_model=4, ffn_width=0))
    x = torch.randn(1, 5, 2)
    h = model.embed(x) + model.ape.table[:5]
    expected = model.readout(h + model.blocks[0].mixer(h))
    assert torch.allclose(model(x), expected, atol=1e-6)
