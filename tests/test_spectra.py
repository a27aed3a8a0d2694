"""The factored spectra equal a full SVD of the materialised gradient."""

import math

import pytest
import torch

from analysis.extract import spectra
from analysis.extract.plain import gradient_statistics

# (T, m, n): below, at and above min(m, n), square and rectangular, like Q/K/V/O shapes.
CASES = [(5, 48, 32), (31, 32, 64), (32, 32, 64), (64, 40, 24), (200, 24, 40), (1, 16, 16), (90, 192, 576)]


def plain_statistics(g: torch.Tensor, x: torch.Tensor) -> dict[str, float]:
    """The reference: materialise the gradient and take a full SVD, as the original study did."""
    return gradient_statistics(g.double().T @ x.double())


def relative_error(ours: float, reference: float, scale: float) -> float:
    return abs(ours - reference) / max(abs(scale), 1e-300)


@pytest.mark.parametrize("n_tokens,m,n", CASES)
def test_every_statistic_matches_full_svd(n_tokens, m, n):
    generator = torch.Generator().manual_seed(n_tokens * 1000 + m + n)
    g = torch.randn(n_tokens, m, generator=generator)
    x = torch.randn(n_tokens, n, generator=generator)
    reference = plain_statistics(g, x)
    ours = {k: v.item() for k, v in spectra.statistics_from_singular_values(spectra.singular_values(g, x)).items()}
    for name in spectra.STATISTICS:
        # a singular value is only defined to within eps * sigma_max, so sigma_min is compared on that scale
        scale = reference["sigma_max"] if name == "sigma_min" else reference[name]
        assert relative_error(ours[name], reference[name], scale) < 1e-4, name


def test_factored_path_is_taken_below_min_dimension_only():
    assert spectra.uses_factored_path(31, (32, 64))
    assert not spectra.uses_factored_path(32, (32, 64))
    assert spectra.prefers_factored_spectrum(20, (32, 64))
    assert not spectra.prefers_factored_spectrum(28, (32, 64))  # exact either way; forming G is cheaper here


@pytest.mark.parametrize("n_tokens", [10, 28, 40])
def test_both_routes_give_the_same_statistics(n_tokens):
    """Below, near and above min(m, n): the route chosen by cost equals the other exact route."""
    torch.manual_seed(n_tokens)
    factors = spectra.LayerFactors(torch.randn(2, n_tokens, 32), torch.randn(2, n_tokens, 48))
    chosen = spectra.statistics_from_singular_values(factors.singular_values())
    svd = spectra.statistics_from_singular_values(torch.linalg.svdvals(factors.g.double().mT @ factors.x.double()))
    for name in spectra.STATISTICS:
        scale = svd["sigma_max"] if name == "sigma_min" else svd[name]
        assert ((chosen[name] - svd[name]).abs() / scale.abs()).max() < 1e-4, name
    if n_tokens < 32:
        assert (factors.singular_values()[:, n_tokens:] == 0).all()


def test_rank_deficient_factors_give_exact_zero_tail():
    torch.manual_seed(1)
    x_row = torch.randn(1, 40)
    x = x_row.repeat(6, 1)  # six identical inputs, as repeated tokens give at layer 0
    g = torch.randn(6, 48)
    s = spectra.singular_values(g, x)
    assert s.shape == (40,)
    reference = torch.linalg.svdvals(g.double().T @ x.double())
    assert torch.allclose(s[:1], reference[:1], rtol=1e-10)
    assert s[1:].abs().max() < 1e-6 * s[0]


def test_batched_layers_equal_one_by_one():
    torch.manual_seed(2)
    g = torch.randn(3, 10, 24)
    x = torch.randn(3, 10, 16)
    batched = spectra.singular_values(g, x)
    for layer in range(3):
        assert torch.allclose(batched[layer], spectra.singular_values(g[layer], x[layer]))


def test_effective_rank_of_known_spectra():
    flat = spectra.statistics_from_singular_values(torch.ones(8, dtype=torch.float64))
    assert flat["effective_rank"].item() == pytest.approx(8.0)
    single = spectra.statistics_from_singular_values(torch.tensor([3.0, 0.0, 0.0], dtype=torch.float64))
    assert single["effective_rank"].item() == pytest.approx(1.0)
    assert single["sigma1_ratio"].item() == pytest.approx(1.0)
    assert single["frobenius"].item() == pytest.approx(3.0)


@pytest.mark.parametrize("n_tokens", [4, 60])
def test_inner_products_and_entry_statistics_match_dense(n_tokens):
    torch.manual_seed(3)
    a = spectra.LayerFactors(torch.randn(2, n_tokens, 24), torch.randn(2, n_tokens, 16))
    b = spectra.LayerFactors(torch.randn(2, n_tokens, 24), torch.randn(2, n_tokens, 16))
    dense_a = a.g.double().mT @ a.x.double()
    dense_b = b.g.double().mT @ b.x.double()
    expected = (dense_a * dense_b).sum((-2, -1))
    assert torch.allclose(spectra.frobenius_inner(a, b), expected, rtol=1e-6)
    entries = spectra.entry_statistics(a.dense())
    assert torch.allclose(entries["entry_max"], dense_a.flatten(-2).amax(-1), rtol=1e-6)
    assert torch.allclose(entries["entry_mean"], dense_a.flatten(-2).mean(-1), rtol=1e-5, atol=1e-7)


def test_cosine_of_zero_gradient_is_nan():
    value = spectra.cosine(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]))
    assert math.isnan(value.item())


@pytest.mark.parametrize("n_tokens", [6, 30])
def test_projections_sharing_inputs_equal_separate_ones(n_tokens):
    """Q, K and V reuse one QR factor and Gram matrix of their common input: same numbers as alone."""
    torch.manual_seed(4)
    x = torch.randn(3, n_tokens, 48)
    shared = spectra.LayerInputs(x)
    gs = [torch.randn(3, n_tokens, m) for m in (48, 16, 16)]
    assert spectra.prefers_factored_spectrum(n_tokens, (16, 48)) == (n_tokens < 12.8)
    for g in gs:
        together = spectra.LayerFactors(g, shared).singular_values()
        alone = spectra.LayerFactors(g, x.clone()).singular_values()
        assert torch.allclose(together, alone, rtol=1e-10, atol=1e-12)
        reference = torch.linalg.svdvals(g.double().mT @ x.double())
        assert (
            (together[:, : reference.shape[-1]] - reference).abs().max() / reference[:, 0].min()
        ) < 1e-6  # float32 dense route: G formed as autograd forms it
    k, v = (spectra.LayerFactors(g, shared) for g in gs[1:])
    expected = ((k.g.double().mT @ x.double()) * (v.g.double().mT @ x.double())).sum((-2, -1))
    assert torch.allclose(spectra.frobenius_inner(k, v), expected, rtol=1e-6)
    following = spectra.frobenius_inner(k, k, slice(0, -1), slice(1, None))
    dense = k.g.double().mT @ x.double()
    assert torch.allclose(following, (dense[:-1] * dense[1:]).sum((-2, -1)), rtol=1e-6)


def test_finiteness_check_per_layer():
    values = torch.randn(4, 5, 6)
    values[1, 2, 3] = math.nan
    values[2, 0, 0] = math.inf
    values[3] = 3e38  # finite entries whose sum overflows: still finite
    assert spectra.all_finite(values).tolist() == [True, False, False, True]


def test_layer_with_repeated_inputs_is_exact_through_the_shared_factor():
    """A numerically singular Gram matrix (identical rows of x) falls back to QR for that layer only."""
    torch.manual_seed(5)
    x = torch.randn(3, 8, 40)
    x[0] = torch.randn(1, 40).repeat(8, 1)  # layer 0: eight identical inputs
    x[1, 4:] = x[1, :4]  # layer 1: rank 4
    g = torch.randn(3, 8, 48)
    inputs = spectra.LayerInputs(x)
    ours = spectra.LayerFactors(g, inputs).singular_values()
    triangle = inputs.triangle()
    assert torch.allclose(triangle.mT @ triangle, x.double() @ x.double().mT, rtol=1e-9, atol=1e-9)
    reference = torch.linalg.svdvals(g.double().mT @ x.double())
    ours_stats = spectra.statistics_from_singular_values(ours)
    reference_stats = spectra.statistics_from_singular_values(reference)
    for name in spectra.STATISTICS:
        scale = reference_stats["sigma_max"] if name == "sigma_min" else reference_stats[name]
        assert ((ours_stats[name] - reference_stats[name]).abs() / scale).max() < 1e-6, name
    assert ours[0, 1:].abs().max() < 1e-6 * ours[0, 0]
