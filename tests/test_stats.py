"""reporter.analysis.stats against scipy and against first principles (CPU only, fast)."""

from __future__ import annotations

import math
import random

import pytest

from reporter.analysis import stats

scipy_stats = pytest.importorskip("scipy.stats")


# --------------------------------------------------------------------------- median CI


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 30, 100, 257])
def test_median_ci_coverage_is_the_binomial_one(n):
    samples = [float(i) for i in range(n)]
    random.Random(n).shuffle(samples)
    ci = stats.median_ci(samples, 0.99)
    k = int(ci.low_ms) + 1  # the interval is [x(k), x(n-k+1)]
    assert ci.high_ms == n - k
    expected = 1 - 2 * scipy_stats.binom.cdf(k - 1, n, 0.5)
    assert ci.coverage == pytest.approx(expected, abs=1e-12)
    if ci.coverage >= 0.99:  # k is the largest that keeps 99 %
        assert 1 - 2 * scipy_stats.binom.cdf(k, n, 0.5) < 0.99 or k == (n + 1) // 2
    else:  # too few samples for 99 %: the widest interval there is
        assert (ci.low_ms, ci.high_ms) == (0.0, n - 1.0)


def test_median_ci_of_three_samples_is_min_max_at_75_percent():
    ci = stats.median_ci([205.49, 205.47, 205.48])
    assert (ci.low_ms, ci.high_ms) == (205.47, 205.49)
    assert ci.coverage == pytest.approx(0.75)


def test_median_ci_of_100_samples_uses_order_statistics_37_and_64():
    ci = stats.median_ci([float(i) for i in range(1, 101)])
    assert (ci.low_ms, ci.high_ms) == (37.0, 64.0)
    assert 0.99 <= ci.coverage < 0.995


def test_median_ci_large_n_uses_a_normal_tail_close_to_the_exact_one():
    n = 2001
    ci = stats.median_ci([float(i) for i in range(n)], 0.99)
    exact_k = int(scipy_stats.binom.ppf(0.005, n, 0.5))
    assert abs(ci.low_ms - exact_k) <= 2


def test_median_ci_rejects_empty_and_bad_confidence():
    with pytest.raises(ValueError, match="no samples"):
        stats.median_ci([])
    with pytest.raises(ValueError, match="confidence"):
        stats.median_ci([1.0], 1.5)


def test_ci_overlap():
    a = stats.MedianCI(1.0, 2.0, 0.99, 10)
    assert a.overlaps(stats.MedianCI(2.0, 3.0, 0.99, 10))
    assert not a.overlaps(stats.MedianCI(2.1, 3.0, 0.99, 10))


# --------------------------------------------------------------------------- Mann–Whitney U


@pytest.mark.parametrize("m,n", [(1, 1), (2, 5), (3, 3), (4, 9), (7, 7), (3, 100), (10, 40)])
def test_u_counts_are_the_exact_null_distribution(m, n):
    counts = stats._u_counts(m, n)
    assert len(counts) == m * n + 1
    assert sum(counts) == math.comb(m + n, m)
    assert counts == counts[::-1]  # symmetric around m·n/2
    if m * n <= 40:  # brute force over all arrangements
        from itertools import combinations

        brute = [0] * (m * n + 1)
        for chosen in combinations(range(m + n), m):
            ranks = [r + 1 for r in chosen]
            brute[sum(ranks) - m * (m + 1) // 2] += 1
        assert counts == brute


@pytest.mark.parametrize("n1,n2,shift,seed", [(3, 3, 0.0, 1), (5, 7, 0.5, 2), (6, 6, 2.0, 3), (3, 100, 0.3, 4),
                                              (19, 60, 0.1, 5)])
def test_exact_p_matches_scipy_without_ties(n1, n2, shift, seed):
    rng = random.Random(seed)
    a = [rng.gauss(0, 1) for _ in range(n1)]
    b = [rng.gauss(shift, 1) for _ in range(n2)]
    ours = stats.mann_whitney_u(a, b)
    ref = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    assert ours.method == "exact"
    assert ours.u == pytest.approx(ref.statistic)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("n1,n2,shift,seed", [(20, 20, 0.0, 1), (50, 80, 0.3, 2), (100, 100, 0.05, 3)])
def test_normal_approximation_matches_scipy_with_ties(n1, n2, shift, seed):
    rng = random.Random(seed)
    # timings rounded to a coarse clock tick, so ties are common
    a = [round(rng.gauss(10, 1), 1) for _ in range(n1)]
    b = [round(rng.gauss(10 + shift, 1), 1) for _ in range(n2)]
    ours = stats.mann_whitney_u(a, b)
    ref = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert ours.method == "normal approximation"
    assert ours.u == pytest.approx(ref.statistic)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_complete_separation_of_3_against_100_is_significant():
    """The normal tail would give p ≈ 0.003 here and miss a 9× speedup; the exact test does not."""
    ours = stats.mann_whitney_u([205.47, 205.49, 205.49], [23.0 + i * 0.01 for i in range(100)])
    assert ours.p_value == pytest.approx(2 / math.comb(103, 3))
    assert ours.p_value < stats.P_THRESHOLD


def test_identical_samples_give_p_one():
    assert stats.mann_whitney_u([1.0] * 30, [1.0] * 30).p_value == 1.0
    assert stats.mann_whitney_u([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]).p_value == 1.0


def test_min_p_value():
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    assert stats.min_p_value(3, 100) == pytest.approx(2 / math.comb(103, 3))
    assert stats.min_p_value(0, 5) == 1.0
    # asv's rule: 6 against 6 can reach 0.002 one-sided but not two-sided
    assert stats.min_p_value(6, 6) > stats.P_THRESHOLD > stats.min_p_value(7, 7)
