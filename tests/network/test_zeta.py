"""Riemann zeta by Euler-Maclaurin, against mpmath, in NumPy and (differentiably) in torch."""

import mpmath
import numpy as np
import pytest
import torch

from expressivity.network.zeta import zeta

BETAS = [1 + 1e-9, 1 + 1e-4, 1.01, 1.1, 1.5, 2.0, 2.5, 3.7, 7.0, 20.0, 64.0]


def test_numpy_zeta_matches_mpmath_to_machine_precision():
    got = zeta(np.array(BETAS))
    want = np.array([float(mpmath.zeta(b)) for b in BETAS])
    assert np.max(np.abs(got - want) / want) < 2e-15
    assert zeta(2.0) == pytest.approx(np.pi**2 / 6, rel=1e-15)


def test_torch_zeta_matches_mpmath_and_differentiates():
    beta = torch.tensor(BETAS[2:], dtype=torch.float64, requires_grad=True)
    value = zeta(beta)
    want = torch.tensor([float(mpmath.zeta(b)) for b in BETAS[2:]], dtype=torch.float64)
    assert torch.allclose(value, want, rtol=2e-15, atol=0)
    (grad,) = torch.autograd.grad(value.sum(), beta)
    want_grad = torch.tensor([float(mpmath.zeta(b, 1, 1)) for b in BETAS[2:]], dtype=torch.float64)
    assert torch.allclose(grad, want_grad, rtol=1e-13, atol=1e-300)
