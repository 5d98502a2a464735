"""The tiled Gibbs-mean search of the soft loss (``search.gibbs_mean``) against two references: a materialised
softmax in float64 (the definition) and the former streaming implementation (chunked running max, recomputing
similarities in the backward), on random and adversarial banks, values and gradients."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.puzzlesim import search as S


class FormerGibbsMean(torch.autograd.Function):
    """The previous implementation, kept as a reference: chunks of ``chunk`` scores, running max, exp of
    ``(s - mu) / T``, backward recomputing each chunk."""

    @staticmethod
    def forward(ctx, q, r, temperature, chunk):
        m, k = q.shape[0], r.shape[0]
        rows = max(1, min(m, chunk))
        cols = max(1, min(k, chunk // rows))
        mu = torch.full((m,), -math.inf, dtype=q.dtype)
        z = torch.zeros(m, dtype=q.dtype)
        a = torch.zeros(m, dtype=q.dtype)
        for r0 in range(0, m, rows):
            qs = q[r0 : r0 + rows]
            mu_s, z_s, a_s = mu[r0 : r0 + rows], z[r0 : r0 + rows], a[r0 : r0 + rows]
            for k0 in range(0, k, cols):
                s = qs @ r[k0 : k0 + cols].T
                new_mu = torch.maximum(mu_s, s.amax(dim=1))
                rescale = torch.exp((mu_s - new_mu) / temperature)
                e = torch.exp((s - new_mu.unsqueeze(1)) / temperature)
                z_s.mul_(rescale).add_(e.sum(dim=1))
                a_s.mul_(rescale).add_((e * s).sum(dim=1))
                mu_s.copy_(new_mu)
        soft = a / z
        ctx.save_for_backward(q, r, mu, z, soft)
        ctx.temperature, ctx.tiles = temperature, (rows, cols)
        return soft

    @staticmethod
    def backward(ctx, grad):
        q, r, mu, z, soft = ctx.saved_tensors
        t = ctx.temperature
        rows, cols = ctx.tiles
        grad_q = torch.zeros_like(q)
        for r0 in range(0, q.shape[0], rows):
            qs = q[r0 : r0 + rows]
            mu_s, z_s, soft_s = mu[r0 : r0 + rows, None], z[r0 : r0 + rows, None], soft[r0 : r0 + rows, None]
            for k0 in range(0, r.shape[0], cols):
                rc = r[k0 : k0 + cols]
                s = qs @ rc.T
                p = torch.exp((s - mu_s) / t) / z_s
                grad_q[r0 : r0 + rows].addmm_(p * (1.0 + (s - soft_s) / t), rc)
        return grad_q * grad.unsqueeze(1), None, None, None


def materialised(q: torch.Tensor, r: torch.Tensor, temperature: float) -> torch.Tensor:
    s = q @ r.T
    return (torch.softmax(s / temperature, dim=1) * s).sum(dim=1)


def make_bank(kind: str, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(queries, references) as unit rows; adversarial kinds stress the running max and the rescaling."""
    g = torch.Generator().manual_seed(seed)
    c = 24
    if kind == "random":
        r = torch.rand(700, c, generator=g, dtype=torch.float64) ** 2
    elif kind == "near duplicates":  # many vectors within 1e-3 of each other: near-ties everywhere
        base = torch.rand(5, c, generator=g, dtype=torch.float64)
        r = base.repeat(140, 1) + 1e-4 * torch.rand(700, c, generator=g, dtype=torch.float64)
    elif kind == "exact ties":
        r = (torch.rand(35, c, generator=g, dtype=torch.float64) ** 2).repeat(20, 1)
    elif kind == "one cluster":
        r = 1.0 + 0.01 * torch.rand(700, c, generator=g, dtype=torch.float64)
    elif kind == "increasing":  # the running max grows in (almost) every chunk
        base = torch.rand(c, generator=g, dtype=torch.float64)
        r = base + torch.linspace(2.0, 0.0, 700, dtype=torch.float64).unsqueeze(1) * torch.rand(
            700, c, generator=g, dtype=torch.float64
        )
    else:
        raise AssertionError(kind)
    q = torch.cat(
        [
            r[::37][:12] + 1e-3 * torch.rand(12, c, generator=g, dtype=torch.float64),
            torch.rand(8, c, generator=g, dtype=torch.float64),
        ]
    )
    q[3] = 0  # an all-zero query: every similarity is 0, soft = 0
    return F.normalize(q, dim=1).to(dtype), F.normalize(r, dim=1).to(dtype)


def value_and_grad(fn, q: torch.Tensor, r: torch.Tensor, w: torch.Tensor):
    x = q.clone().requires_grad_(True)
    out = fn(x, r)
    (out * w).sum().backward()
    return out.detach(), x.grad


KINDS = ["random", "near duplicates", "exact ties", "one cluster", "increasing"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("temperature", [1e-4, 0.01, 0.05, 1.0])
@pytest.mark.parametrize("chunk_size", [97, 2000, 1 << 22])
def test_float64_equals_the_materialised_softmax(kind, temperature, chunk_size):
    q, r = make_bank(kind, torch.float64)
    w = torch.rand(q.shape[0], generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got, got_grad = value_and_grad(lambda x, r: S.gibbs_mean(x, r, temperature, chunk_size), q, r, w)
    ref, ref_grad = value_and_grad(lambda x, r: materialised(x, r, temperature), q, r, w)
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=0)
    # the gradient's factor (s - soft) / T scales rounding by 1 / T
    torch.testing.assert_close(got_grad, ref_grad, atol=1e-11 / temperature, rtol=1e-9)
    assert float(got[3]) == 0.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("temperature", [1e-4, 0.01, 0.05, 1.0])
def test_float32_equals_the_former_implementation(kind, temperature):
    q, r = make_bank(kind, torch.float32)
    w = torch.rand(q.shape[0], generator=torch.Generator().manual_seed(2))
    got, got_grad = value_and_grad(lambda x, r: S.gibbs_mean(x, r, temperature, 1 << 22), q, r, w)
    old, old_grad = value_and_grad(lambda x, r: FormerGibbsMean.apply(x, r, temperature, 1 << 22), q, r, w)
    ref, ref_grad = value_and_grad(lambda x, r: materialised(x, r, temperature), q.double(), r.double(), w.double())
    torch.testing.assert_close(got, old, atol=1e-6, rtol=0)
    # both within fp32 rounding of the float64 definition; the gradient's rounding grows like 1 / T
    scale = float(ref_grad.abs().max())
    tol = 2e-6 * max(1.0, 1.0 / temperature) * scale
    assert float((got.double() - ref).abs().max()) <= 1e-6
    assert float((got_grad.double() - ref_grad).abs().max()) <= tol
    assert float((old_grad.double() - ref_grad).abs().max()) <= tol


def test_tiles_respect_the_chunk_budget_and_cpu_cache():
    cpu = torch.device("cpu")
    for m, k, chunk in [(1, 1, 1), (5000, 100_000, 1 << 22), (3, 10, 8), (1000, 50, 1 << 22)]:
        rows, cols = S._soft_tiles(m, k, chunk, cpu)
        assert 1 <= rows <= m and 1 <= cols <= k
        assert 2 * rows * cols <= max(2, chunk) and rows * cols <= S.SOFT_TILE
