"""Is a difference between two timings real? Order statistics and rank tests, in pure Python.

Two tools, chosen the way asv chooses them:

* the **Mann–Whitney U test** on the raw samples, used whenever the two sample sizes can
  reach the significance threshold at all (the smallest two-sided p of n₁ against n₂
  samples is 2 / C(n₁+n₂, n₁)). The p-value is exact (the null distribution of U counted
  with a Gaussian binomial coefficient) while one side has fewer than 20 samples, so a small
  sample against a large one, where the normal tail is badly off, is judged right; from 20
  a side it comes from the normal approximation with tie and continuity correction.
* **confidence intervals of the median** from order statistics (a binomial argument that
  assumes nothing about the distribution), used when the samples are too few for the test:
  non-overlapping intervals count as a difference. With n samples no interval wider than
  [min, max] exists, whose coverage is 1 − 2·0.5ⁿ (75 % for n = 3); the coverage actually
  achieved is reported with the interval.

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
# The exact U distribution costs about min(n1, n2)² · max(n1, n2) big-integer additions
# (0.14 s at 100 against 100); from 20 samples a side the normal approximation is accurate.
_EXACT_MAX_SMALLER = 20
_EXACT_BUDGET = 2_000_000
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
class MannWhitneyResult:
    u: float  # U of the first sample: pairs (a, b) with a > b, ties counted one half
    p_value: float  # two-sided
    method: str  # 'exact' or 'normal approximation'


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


# --------------------------------------------------------------------------- Mann–Whitney U


def _ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of ``values``, and the sizes of the groups of tied values."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        for t in range(i, j + 1):
            ranks[order[t]] = mid
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _u_counts(m: int, n: int) -> list[int]:
    """How many of the C(m+n, m) arrangements give U = 0, 1, …, m·n (no ties).

    These are the coefficients of the Gaussian binomial [m+n choose m]_q
    = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i); each factor is one pass over the polynomial.
    """
    degree = m * n
    c = [0] * (degree + 1)
    c[0] = 1
    for i in range(1, m + 1):
        shift = n + i
        for k in range(degree, shift - 1, -1):  # × (1 − q^shift)
            c[k] -= c[k - shift]
        for k in range(i, degree + 1):  # ÷ (1 − q^i): a running sum with stride i
            c[k] += c[k - i]
    return c


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p the rank test can give with these sample sizes."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, min(n1, n2)))


def mann_whitney_u(a: list[float], b: list[float]) -> MannWhitneyResult:
    """Two-sided Mann–Whitney U test of ``a`` against ``b`` (scipy's ``mannwhitneyu`` with
    ``method='auto'``-like choices, but exact for lopsided sizes as long as that is cheap)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u: both samples need at least one value")
    ranks, ties = _ranks(list(a) + list(b))
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    small, large = sorted((n1, n2))
    if small < _EXACT_MAX_SMALLER and small * small * large <= _EXACT_BUDGET:
        counts = _u_counts(n1, n2)
        total = math.comb(n1 + n2, n1)
        below = sum(counts[: math.floor(u1) + 1])
        above = sum(counts[math.ceil(u1):])
        p = min(1.0, 2 * min(below, above) / total)
        return MannWhitneyResult(u=u1, p_value=p, method="exact")
    n = n1 + n2
    mean_u = n1 * n2 / 2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    var_u = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var_u <= 0:  # every value identical
        return MannWhitneyResult(u=u1, p_value=1.0, method="normal approximation")
    z = max(abs(u1 - mean_u) - 0.5, 0.0) / math.sqrt(var_u)
    return MannWhitneyResult(u=u1, p_value=min(1.0, math.erfc(z / math.sqrt(2))), method="normal approximation")
