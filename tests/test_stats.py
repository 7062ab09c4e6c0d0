"""reporter.analysis.stats against scipy and against first principles (CPU only, fast)."""

from __future__ import annotations

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


# --------------------------------------------------------------------------- Welch's t-test


@pytest.mark.parametrize("a,b,x", [(0.5, 0.5, 0.3), (2.0, 3.0, 0.01), (50.0, 0.5, 0.97), (0.5, 0.5, 0.999999),
                                   (99.0, 0.5, 0.2), (1.5, 40.0, 0.5), (3.0, 3.0, 0.5)])
def test_incomplete_beta_matches_scipy(a, b, x):
    special = pytest.importorskip("scipy.special")
    assert stats.incomplete_beta(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("t,df", [(0.0, 5.0), (1.0, 1.0), (2.5, 3.7), (-4.0, 12.0), (10.0, 197.9), (35.0, 60.0),
                                  (0.3, 1e5)])
def test_t_tail_matches_scipy(t, df):
    assert stats.t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(abs(t), df), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("n1,n2,shift,spread_b,seed", [(3, 3, 0.0, 1.0, 1), (5, 7, 0.5, 3.0, 2), (100, 100, 0.05, 1.0, 3),
                                                       (3, 100, 0.3, 0.2, 4), (100, 30, 2.0, 5.0, 5)])
def test_welch_matches_scipy(n1, n2, shift, spread_b, seed):
    rng = random.Random(seed)
    a = [rng.gauss(10, 1) for _ in range(n1)]
    b = [rng.gauss(10 + shift, spread_b) for _ in range(n2)]
    ours = stats.welch_t_test(a, b)
    ref = scipy_stats.ttest_ind(b, a, equal_var=False)
    assert ours.t == pytest.approx(ref.statistic, rel=1e-9)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-8)


def test_welch_sees_a_power_cap_dip_as_spread_not_as_a_shift():
    """A run whose calls met a dip (a few much slower calls) has a wider spread: the same median shift
    that is clear between two quiet runs is not, between a quiet run and one with dips, unless the
    means differ by more than that spread."""
    quiet = [13.30 + 0.001 * (i % 7) for i in range(100)]
    shifted = [x - 0.2 for x in quiet]
    dipped = shifted[:90] + [16.4] * 10
    assert stats.welch_t_test(quiet, shifted).p_value < stats.P_THRESHOLD
    assert stats.welch_t_test(quiet, dipped).t > 0  # the dips pull the mean above the quiet run's


def test_welch_degenerate_samples():
    assert stats.welch_t_test([1.0, 1.0, 1.0], [1.0, 1.0]).p_value == 1.0
    assert stats.welch_t_test([1.0, 1.0, 1.0], [2.0, 2.0]).p_value == 0.0
    with pytest.raises(ValueError, match="at least two values"):
        stats.welch_t_test([1.0], [1.0, 2.0])
