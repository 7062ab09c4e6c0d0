"""Is a difference between two timings real? The one test every comparison uses, and the spread
of a median, in pure Python.

* **Welch's t-test** on the two samples' means (:func:`welch_t_test`). Every figure in a report is
  a mean (the course harness's statistic, :mod:`reporter.standing`), so the test that decides
  whether two figures differ asks about means too: one statistic for the ratio and for its verdict.
  Welch's form does not assume the two runs share a variance (a run that met a power-cap dip has
  a much wider spread than one that did not). The p-value is two-sided, from Student's t
  distribution with the Welch–Satterthwaite degrees of freedom; the t distribution's tail is the
  regularized incomplete beta function, evaluated by its continued fraction.
* **confidence intervals of the median** from order statistics (a binomial argument that
  assumes nothing about the distribution), shown beside a run's figure as its spread. With n
  samples no interval wider than [min, max] exists, whose coverage is 1 − 2·0.5ⁿ (75 % for
  n = 3); the coverage actually achieved is reported with the interval.

Why not scipy: ``import scipy.stats`` alone takes about 0.9 s, more than the whole budget
of ``report diff``. The tests check these functions against scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# A significance threshold as strict as asv's: a work log compares many pairs of runs, and
# a 5 % false-alarm rate would flag noise every few diffs.
P_THRESHOLD = 0.002
# asv's fallback intervals are 99 % ones as well.
CI_CONFIDENCE = 0.99
# Above this n the binomial tail of the median CI uses the normal approximation.
_EXACT_BINOMIAL_MAX_N = 1000


@dataclass(frozen=True)
class MedianCI:
    """[low_ms, high_ms] = [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎]: covers the true median with probability ``coverage``."""

    low_ms: float
    high_ms: float
    coverage: float
    n: int

    def overlaps(self, other: MedianCI) -> bool:
        return self.low_ms <= other.high_ms and other.low_ms <= self.high_ms


@dataclass(frozen=True)
class WelchResult:
    t: float  # (mean of b − mean of a) / its standard error
    df: float  # Welch–Satterthwaite degrees of freedom
    p_value: float  # two-sided


# --------------------------------------------------------------------------- median CI


def _binomial_half_cdf(n: int, k: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= _EXACT_BINOMIAL_MAX_N:
        return sum(math.comb(n, j) for j in range(k + 1)) / 2**n
    z = (k + 0.5 - n / 2) / math.sqrt(n / 4)
    return 0.5 * math.erfc(-z / math.sqrt(2))


def median_ci(samples: list[float], confidence: float = CI_CONFIDENCE) -> MedianCI:
    """Distribution-free confidence interval of the median from order statistics.

    The interval [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] misses the median only when k−1 or fewer samples fall on one
    side of it, so its coverage is 1 − 2·P(Bin(n, ½) ≤ k−1); k is the largest that keeps the
    coverage at or above ``confidence``. Too few samples for that: [min, max] and its coverage.
    """
    if not samples:
        raise ValueError("median_ci: no samples")
    if not 0 < confidence < 1:
        raise ValueError(f"median_ci: confidence must be in (0, 1), got {confidence}")
    s = sorted(samples)
    n = len(s)
    k = 1
    while k < (n + 1) // 2 and 1 - 2 * _binomial_half_cdf(n, k) >= confidence:
        k += 1
    coverage = 1 - 2 * _binomial_half_cdf(n, k - 1)
    return MedianCI(low_ms=s[k - 1], high_ms=s[n - k], coverage=coverage, n=n)


# --------------------------------------------------------------------------- Welch's t-test


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1."""
    if not (a > 0 and b > 0):
        raise ValueError(f"incomplete_beta: a and b must be positive, got {a}, {b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"incomplete_beta: x must be in [0, 1], got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(log_front)
    if x < (a + 1) / (a + b + 2):  # the fraction converges fast on this side; use the symmetry on the other
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t distribution with ``df`` degrees of freedom (any real df > 0)."""
    if df <= 0:
        raise ValueError(f"t_two_sided_p: df must be positive, got {df}")
    if math.isinf(t):
        return 0.0
    return min(1.0, incomplete_beta(df / 2, 0.5, df / (df + t * t)))


def _mean_var(xs: list[float]) -> tuple[float, float]:
    m = math.fsum(xs) / len(xs)
    return m, math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def welch_t_test(a: list[float], b: list[float]) -> WelchResult:
    """Two-sided Welch's t-test: do ``a`` and ``b`` have different means? Both need two samples or
    more. Two samples with no spread at all differ with certainty when their means differ."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"welch_t_test: both samples need at least two values (got {len(a)} and {len(b)})")
    ma, va = _mean_var(list(a))
    mb, vb = _mean_var(list(b))
    sa, sb = va / len(a), vb / len(b)
    se2 = sa + sb
    if se2 == 0:
        same = ma == mb
        return WelchResult(t=0.0 if same else math.copysign(math.inf, mb - ma), df=float(len(a) + len(b) - 2),
                           p_value=1.0 if same else 0.0)
    t = (mb - ma) / math.sqrt(se2)
    df = se2 * se2 / ((sa * sa / (len(a) - 1) if sa else 0.0) + (sb * sb / (len(b) - 1) if sb else 0.0))
    return WelchResult(t=t, df=df, p_value=t_two_sided_p(t, df))
