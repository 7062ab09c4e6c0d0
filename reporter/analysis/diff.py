"""What changed between two runs, and whether the change in time is real.

Pure functions over records (no rich, typer, matplotlib or file access), so the CLI, the
HTML report and CI scripts all reach the same verdicts:

* :func:`compare_timing` — faster / slower / same within noise: the means (the statistic of every
  figure) compared by Welch's t-test on the samples (see :mod:`.stats`), and a minimum effect
  size, because a 0.1 % shift measured over thousands of samples is real in the statistical
  sense and meaningless for a work log;
* :func:`diff_runs` — the whole comparison: timing table, every figure and profiler metric
  both runs have (sorted by how far they moved), the code diff, the notes diff, and the
  warnings that say when two runs are not apples to apples.
"""

from __future__ import annotations

import difflib
import math
import re
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from .. import sources
from ..records import Run, SourceFile, TimingStats
from . import stats

# A change smaller than this is reported as "same" however significant: run-to-run drift of
# clocks and temperature between sessions is of this order on a datacenter GPU, and the
# samples of one session cannot see it. asv's default is coarser still (a factor of 1.1).
MIN_EFFECT_PCT = 1.0


# --------------------------------------------------------------------------- timing verdict


def format_ms(ms: float, digits: int = 4) -> str:
    """A duration with ``digits`` significant digits, in µs under 1 ms: '23.14 ms', '126.9 µs'."""
    value, unit = (ms * 1e3, "µs") if abs(ms) < 1 else (ms, "ms")
    whole = len(str(int(abs(value)))) if abs(value) >= 1 else 1
    return f"{value:.{max(digits - whole, 0)}f} {unit}"


def format_ms_range(low_ms: float, high_ms: float) -> str:
    """'23.01–23.54 ms': enough digits that the two ends differ when they do."""
    for digits in range(4, 9):
        lo, hi = format_ms(low_ms, digits), format_ms(high_ms, digits)
        if lo != hi or low_ms == high_ms:
            break
    lo_value, lo_unit = lo.split()
    return f"{lo_value}–{hi}" if lo_unit == hi.split()[1] else f"{lo}–{hi}"


def format_p(p: float) -> str:
    """'p=3e-12', 'p=0.41'; a p that underflows to zero is 'p<1e-300'."""
    if p < 1e-300:
        return "p<1e-300"
    return f"p={p:.0e}" if p < 1e-3 else f"p={p:.2g}"


class Verdict(BaseModel):
    """Is B faster than A? ``ratio`` is mean_b / mean_a (below 1: B is faster): the same statistic as
    every figure (:mod:`reporter.standing`), tested by Welch's t-test on the two runs' samples."""

    verdict: Literal["faster", "slower", "same"]
    ratio: float
    change_pct: float
    test: str
    p_value: float | None  # None: too few samples to test
    mean_a_ms: float
    mean_b_ms: float
    n_a: int
    n_b: int
    significant: bool
    min_effect_pct: float
    reason: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sentence(self) -> str:
        """'1.08× faster (mean 23.14 → 21.45 ms; Welch's t-test p=3e-12)'. The direction word always
        follows the ratio it prints; the verdict only says whether the test makes it a change."""
        means = f"mean {self._pair()}"
        evidence = (f"{self.test} {format_p(self.p_value)}" if self.p_value is not None
                    else f"not tested: {self.reason}")
        direction = ratio_words(1 / self.ratio)
        if self.verdict != "same":
            return f"{direction} ({means}; {evidence})"
        if self.significant:  # a difference the test sees, smaller than the effect that counts
            return (f"{direction}, the same within {self.min_effect_pct:g} % ({means}; {evidence}: measurable, but "
                    f"under the {self.min_effect_pct:g} % minimum effect that counts as a change)")
        return f"{direction}, the same within noise ({means}; {evidence})"

    def _pair(self) -> str:
        a, b = format_ms(self.mean_a_ms), format_ms(self.mean_b_ms)
        unit_a, unit_b = a.split()[1], b.split()[1]
        return f"{a.split()[0]} → {b}" if unit_a == unit_b else f"{a} → {b}"


def ratio_words(speedup: float) -> str:
    """'1.28× faster', '1.02× slower', '32.9× faster', '1.00×' (a ratio that rounds to one has no
    direction): how a time compares with another, ``speedup`` being theirs / mine, to three significant
    digits. The one wording of a ratio everywhere."""
    from .facts import fmt_number

    factor = speedup if speedup >= 1 else 1 / speedup
    text = fmt_number(factor, 3)
    if text == "1.00":
        return "1.00×"
    return f"{text}× faster" if speedup > 1 else f"{text}× slower"


def compare_timing(a: TimingStats, b: TimingStats, *, min_effect_pct: float = MIN_EFFECT_PCT,
                   p_threshold: float = stats.P_THRESHOLD) -> Verdict:
    """Is B (after) faster or slower than A (before), or the same within noise? The one test every
    comparison in every output uses.

    The means are compared (the figures are means) with Welch's t-test on the samples; a change
    counts when p < ``p_threshold`` and the means differ by at least ``min_effect_pct``. With
    fewer than two samples on a side there is no spread to test against: the same within noise.
    """
    sa, sb = list(a.samples_ms) or [a.mean_ms], list(b.samples_ms) or [b.mean_ms]
    ma, mb = a.mean_ms, b.mean_ms
    ratio = mb / ma if ma > 0 else math.inf
    change_pct = (ratio - 1) * 100
    p_value: float | None = None
    reason = ""
    if min(len(sa), len(sb)) >= 2:
        p_value = stats.welch_t_test(sa, sb).p_value
        significant = p_value < p_threshold
    else:
        significant = False
        reason = f"{min(len(sa), len(sb))} sample on one side, no spread to test against"
    too_small = significant and abs(change_pct) < min_effect_pct
    if too_small:
        reason = f"{change_pct:+.2f} % is under the {min_effect_pct:g} % minimum effect"
    verdict: Literal["faster", "slower", "same"] = (
        "same" if not significant or too_small else "faster" if ratio < 1 else "slower")
    return Verdict(verdict=verdict, ratio=ratio, change_pct=change_pct, test="Welch's t-test", p_value=p_value,
                   mean_a_ms=ma, mean_b_ms=mb, n_a=len(sa), n_b=len(sb), significant=significant,
                   min_effect_pct=min_effect_pct, reason=reason)


# --------------------------------------------------------------------------- the whole diff


class RunRef(BaseModel):
    """Which run a side of the diff is."""

    assignment: str
    version: str
    run_id: str
    case_name: str
    created_utc: datetime
    gpu: str
    git_commit: str | None
    git_dirty: bool | None
    code_digest: str
    check_passed: bool

    @property
    def label(self) -> str:
        return f"{self.version}@{self.run_id}"


class FigureDelta(BaseModel):
    """One number both runs have: a derived figure, a peer's time, a profiler metric."""

    group: str
    name: str  # the record's field or metric name, stable for scripts
    label: str = ""  # what people read; the name when empty
    unit: str
    a: float
    b: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float:
        return self.b - self.a

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rel_change(self) -> float | None:
        """(b − a) / |a|; None when a is 0 and b is not."""
        if self.a == self.b:
            return 0.0
        return (self.b - self.a) / abs(self.a) if self.a else None

    @property
    def title(self) -> str:
        return self.label or self.name

    @property
    def moved(self) -> float:
        """How far the figure moved, for sorting (a change from 0 counts as infinite)."""
        r = self.rel_change
        return math.inf if r is None else abs(r)


class TextChange(BaseModel):
    """A string both runs have that differs (e.g. a profiler metric given as text)."""

    group: str
    name: str
    a: str
    b: str


class FileDiff(BaseModel):
    path_a: str | None
    path_b: str | None
    unified: str
    lines_added: int
    lines_removed: int
    unreadable: str = Field("", description="why the texts could not be compared (a text the source store lacks)")

    @property
    def changed(self) -> bool:
        return bool(self.unified) or bool(self.unreadable)


class RunDiff(BaseModel):
    a: RunRef
    b: RunRef
    verdict: Verdict | None
    timing_note: str = ""
    timing_rows: list[FigureDelta]
    figures: list[FigureDelta]
    text_changes: list[TextChange]
    code: list[FileDiff]
    notes_diff: str | None = None
    notes_note: str = ""
    warnings: list[str]
    remarks: list[str]

    @property
    def apples_to_apples(self) -> bool:
        return not self.warnings

    def slower_beyond(self, pct: float) -> bool:
        """True when B is significantly slower than A by more than ``pct`` percent."""
        v = self.verdict
        return v is not None and v.verdict == "slower" and v.change_pct > pct


def run_ref(run: Run) -> RunRef:
    return RunRef(assignment=run.assignment, version=run.version, run_id=run.run_id,
                  case_name=run.case_name, created_utc=run.created_utc, gpu=run.device.name,
                  git_commit=run.code.git_commit, git_dirty=run.code.git_dirty,
                  code_digest=run.code.digest, check_passed=run.check.passed)


def diff_runs(a: Run, b: Run, *, logs: Path, notes_a: str | None = None, notes_b: str | None = None,
              min_effect_pct: float = MIN_EFFECT_PCT) -> RunDiff:
    """Compare run A (before) with run B (after). ``logs``: where the source store is (the texts of
    the code the runs name); ``notes_*`` are the versions' work-log sections (None: no worklog.md,
    or no section for that version)."""
    verdict, timing_note = None, ""
    if a.timing is not None and b.timing is not None:
        verdict = compare_timing(a.timing, b.timing, min_effect_pct=min_effect_pct)
    else:
        missing = [f"{side} ({r.version}: {'check failed' if not r.check.passed else 'not timed'})"
                   for side, r in (("A", a), ("B", b)) if r.timing is None]
        timing_note = "no timing to compare: " + ", ".join(missing)
    figures, texts = _figures(a, b)
    notes_diff, notes_note = _notes(a, b, notes_a, notes_b)
    return RunDiff(
        a=run_ref(a), b=run_ref(b), verdict=verdict, timing_note=timing_note,
        timing_rows=_timing_rows(a.timing, b.timing) if a.timing and b.timing else [],
        figures=sorted(figures, key=lambda f: f.moved, reverse=True), text_changes=texts,
        code=code_diff(a, b, logs=logs), notes_diff=notes_diff, notes_note=notes_note,
        warnings=comparability_warnings(a, b), remarks=_remarks(a, b, verdict),
    )


def _timing_rows(a: TimingStats, b: TimingStats) -> list[FigureDelta]:
    rows = [FigureDelta(group="timing", name="mean", unit="ms", a=a.mean_ms, b=b.mean_ms),
            FigureDelta(group="timing", name="standard error", unit="ms", a=a.stderr_ms, b=b.stderr_ms),
            FigureDelta(group="timing", name="median", unit="ms", a=a.median_ms, b=b.median_ms),
            FigureDelta(group="timing", name="min", unit="ms", a=a.min_ms, b=b.min_ms)]
    for q in ("p05", "p95"):
        if q in a.quantiles_ms and q in b.quantiles_ms:
            rows.append(FigureDelta(group="timing", name=q, unit="ms", a=a.quantiles_ms[q], b=b.quantiles_ms[q]))
    rows += [FigureDelta(group="timing", name="max", unit="ms", a=a.max_ms, b=b.max_ms),
             FigureDelta(group="timing", name="std", unit="ms", a=a.std_ms, b=b.std_ms),
             FigureDelta(group="timing", name="samples", unit="", a=a.n, b=b.n)]
    return rows


# --------------------------------------------------------------------------- figures


_DERIVED = [("tflops", "compute", "TFLOP/s"), ("gbps", "memory traffic", "GB/s"),
            ("fraction_of_ceiling", "fraction of ceiling", "of ceiling"), ("floor_ms", "roofline floor", "ms"),
            ("ceiling_value", "ceiling", ""), ("arithmetic_intensity", "arithmetic intensity", "flop/B")]
_CHECK = [("max_abs_error", "max abs error"), ("max_rel_error", "max rel error"), ("mismatches", "mismatches")]


def _figures(a: Run, b: Run) -> tuple[list[FigureDelta], list[TextChange]]:
    out: list[FigureDelta] = []
    if a.derived and b.derived:
        for name, label, unit in _DERIVED:
            va, vb = getattr(a.derived, name), getattr(b.derived, name)
            if va is not None and vb is not None:
                unit = unit or (a.derived.ceiling_unit or "")
                out.append(FigureDelta(group="derived", name=name, label=label, unit=unit, a=va, b=vb))
    for name, label in _CHECK:
        va, vb = getattr(a.check, name), getattr(b.check, name)
        if va is not None and vb is not None:
            out.append(FigureDelta(group="check", name=name, label=label, unit="", a=va, b=vb))
    peers_b = {p.name: p for p in b.peers}
    for pa in a.peers:
        pb = peers_b.get(pa.name)
        if pb and pa.timing and pb.timing:
            out.append(FigureDelta(group="peer", name=pa.name, label=f"{pa.name} mean", unit="ms",
                                   a=pa.timing.mean_ms, b=pb.timing.mean_ms))
    metrics, texts = _profile_figures(a, b)
    return out + metrics, texts


def short_kernel_name(name: str, width: int = 40) -> str:
    """'void at::native::(anonymous)::softmax<float>(float*, …)' -> 'softmax'-like short names."""
    base = re.sub(r"\(.*$", "", name).strip()
    depth, kept = 0, []
    for ch in base:  # drop template arguments
        depth += ch == "<"
        if depth == 0:
            kept.append(ch)
        depth -= ch == ">"
    base = "".join(kept).split()[-1] if "".join(kept).split() else name
    base = base.split("::")[-1] or base
    return base if len(base) <= width else base[: width - 1] + "…"


def _kernel_keys(run: Run) -> dict[str, object]:
    """Profiled kernels keyed by short name (#k for the k-th launch of the same name)."""
    out: dict[str, object] = {}
    seen: dict[str, int] = {}
    for k in run.profile.kernels if run.profile else []:
        short = short_kernel_name(k.name)
        seen[short] = seen.get(short, 0) + 1
        out[short if seen[short] == 1 else f"{short}#{seen[short]}"] = k
    return out


def _profile_figures(a: Run, b: Run) -> tuple[list[FigureDelta], list[TextChange]]:
    if not (a.profile and b.profile and a.profile.status == "ok" and b.profile.status == "ok"):
        return [], []
    from ..ncu_metrics import CS149_BLOCK

    labels = {metric: label for label, metric in CS149_BLOCK}
    ka, kb = _kernel_keys(a), _kernel_keys(b)
    if len(ka) == 1 and len(kb) == 1:  # one kernel each: the same role even when renamed
        (na, ra), (nb, rb) = next(iter(ka.items())), next(iter(kb.items()))
        pairs = [(na if na == nb else f"{na} → {nb}", ra, rb)]
    else:
        pairs = [(name, ka[name], kb[name]) for name in ka if name in kb]
    figures: list[FigureDelta] = []
    texts: list[TextChange] = []
    for label, ra, rb in pairs:
        for metric, ma in ra.metrics.items():  # type: ignore[attr-defined]
            mb = rb.metrics.get(metric)  # type: ignore[attr-defined]
            if mb is None:
                continue
            group = f"profile {label}"
            if isinstance(ma.value, (int, float)) and isinstance(mb.value, (int, float)):
                figures.append(FigureDelta(group=group, name=metric, label=labels.get(metric, ""), unit=ma.unit,
                                           a=ma.value, b=mb.value))
            elif str(ma.value) != str(mb.value):
                texts.append(TextChange(group=group, name=metric, a=str(ma.value), b=str(mb.value)))
    if len(ka) > 1 or len(kb) > 1:
        figures += _all_kernel_figures(a, b, labels)
    return figures, texts


def _all_kernel_figures(a: Run, b: Run, labels: dict[str, str]) -> list[FigureDelta]:
    """Counters summed and percentages duration-weighted over every profiled kernel: what
    compares a version of many kernels with one of few."""
    from .metrics import total, weighted_pct

    kernels_a, kernels_b = a.profile.kernels, b.profile.kernels  # type: ignore[union-attr]
    out = [FigureDelta(group="profile, all kernels", name="kernels", label="kernel launches", unit="",
                       a=len(kernels_a), b=len(kernels_b))]
    units = {name: m.unit for k in kernels_a for name, m in k.metrics.items()}
    common = [n for n in units if any(n in k.metrics for k in kernels_b)]
    for name in common:
        if name.endswith(".sum") and "peak_sustained" not in name and "per_second" not in name:
            va, vb = total(kernels_a, name), total(kernels_b, name)
        elif "pct" in name:
            va, vb = weighted_pct(kernels_a, name), weighted_pct(kernels_b, name)
        else:
            continue
        if va is not None and vb is not None:
            out.append(FigureDelta(group="profile, all kernels", name=name, label=labels.get(name, ""),
                                   unit=units[name], a=va, b=vb))
    return out


# --------------------------------------------------------------------------- code and notes


def _file_role(f: SourceFile, version: str) -> str:
    """A key that pairs a version's own files across versions: 'kernels/x/{version}.cu'."""
    p = PurePosixPath(f.path)
    stem = "{version}" if p.stem == version else p.stem
    return str(p.with_name(stem + p.suffix))


def _pair_files(a: Run, b: Run) -> list[tuple[SourceFile | None, SourceFile | None]]:
    """Pair the two snapshots' files: the same path first (a shared module, say v03 importing
    v02's kernel), then each version's own files by role (v01_naive.py with v02_fused.py)."""
    paths_b = {f.path: f for f in b.code.files}
    pairs: list[tuple[SourceFile | None, SourceFile | None]] = []
    rest_a = []
    for f in a.code.files:
        if f.path in paths_b:
            pairs.append((f, paths_b.pop(f.path)))
        else:
            rest_a.append(f)
    roles_b = {_file_role(f, b.version): f for f in paths_b.values()}
    for f in rest_a:
        pairs.append((f, roles_b.pop(_file_role(f, a.version), None)))
    pairs += [(None, f) for f in roles_b.values()]
    return pairs


def code_diff(a: Run, b: Run, *, logs: Path, context_lines: int = 3) -> list[FileDiff]:
    """Unified diffs of the two code snapshots (files that did not change are left out); a pair whose
    text the source store under ``logs`` lacks is listed with why, not diffed."""
    out = []
    for fa, fb in _pair_files(a, b):
        if fa and fb and fa.sha256 == fb.sha256:
            continue
        try:
            text_a = sources.read(logs, fa) if fa else ""
            text_b = sources.read(logs, fb) if fb else ""
        except sources.SourceError as e:
            out.append(FileDiff(path_a=fa.path if fa else None, path_b=fb.path if fb else None, unified="",
                                lines_added=0, lines_removed=0, unreadable=str(e)))
            continue
        lines = list(difflib.unified_diff(
            text_a.splitlines(keepends=True), text_b.splitlines(keepends=True),
            fromfile=fa.path if fa else "/dev/null", tofile=fb.path if fb else "/dev/null", n=context_lines))
        unified = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        body = [ln for ln in lines if not ln.startswith(("---", "+++"))]
        out.append(FileDiff(path_a=fa.path if fa else None, path_b=fb.path if fb else None, unified=unified,
                            lines_added=sum(ln.startswith("+") for ln in body),
                            lines_removed=sum(ln.startswith("-") for ln in body)))
    return out


def _notes(a: Run, b: Run, notes_a: str | None, notes_b: str | None) -> tuple[str | None, str]:
    if notes_a is None and notes_b is None:
        return None, "no work-log section for either version"
    if a.version == b.version:
        return None, "same version: one work-log section"
    lines = list(difflib.unified_diff((notes_a or "").splitlines(keepends=True),
                                      (notes_b or "").splitlines(keepends=True),
                                      fromfile=f"worklog.md § {a.version}" if notes_a is not None else "/dev/null",
                                      tofile=f"worklog.md § {b.version}" if notes_b is not None else "/dev/null",
                                      n=2))
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines), ""


# --------------------------------------------------------------------------- comparability


_DEVICE_LABELS = {"name": "GPU", "driver_version": "driver", "cuda_version": "CUDA",
                  "torch_version": "torch", "triton_version": "Triton", "cupy_version": "CuPy"}


def comparability_warnings(a: Run, b: Run) -> list[str]:
    """Reasons the two runs are not apples to apples; empty when they are."""
    out = []
    if a.assignment != b.assignment:
        out.append(f"different assignments: {a.assignment} vs {b.assignment}")
    for field in a.device.same_software(b.device):
        label = _DEVICE_LABELS.get(field, field)
        out.append(f"{label} differs: {getattr(a.device, field)} → {getattr(b.device, field)}")
    if a.case_name != b.case_name:
        out.append(f"case differs: {a.case_name} → {b.case_name}")
    elif a.case != b.case:
        changed = sorted(k for k in {*a.case, *b.case} if a.case.get(k) != b.case.get(k))
        out.append(f"case '{a.case_name}' has different parameters: "
                   + ", ".join(f"{k} {a.case.get(k)} → {b.case.get(k)}" for k in changed))
    if a.seed != b.seed:
        out.append(f"seed differs: {a.seed} → {b.seed}")
    if a.timing and b.timing:
        ta, tb = a.timing, b.timing
        for field, label in (("method", "timing method"), ("l2_flush", "L2 flush"), ("ranked", "ranked mode")):
            if getattr(ta, field) != getattr(tb, field):
                out.append(f"{label} differs: {getattr(ta, field)} → {getattr(tb, field)}")
    return out


def session_remark(session_a: str, session_b: str) -> str:
    """Two runs from different `report run` sessions: the machine may not be the same one."""
    return (f"different sessions ({session_a} → {session_b}): the card's state may differ (clocks, temperature, "
            "perhaps another physical GPU of the same model); within-session noise understates between-session "
            "spread, so a change of a few percent may be the machine")


def _remarks(a: Run, b: Run, verdict: Verdict | None) -> list[str]:
    """Facts worth knowing that do not spoil the comparison."""
    out = []
    if a.code.digest == b.code.digest:
        out.append(f"same code in both runs (digest {a.code.digest}): any difference is the machine, not the code")
    if a.session_id != b.session_id:
        out.append(session_remark(a.session_id, b.session_id))
    dirty = [(side, r) for side, r in (("A", a), ("B", b)) if r.code.git_dirty]
    if dirty:
        who = " and ".join(side for side, _ in dirty)
        commits = ", ".join(dict.fromkeys(str(r.code.git_commit) for _, r in dirty))
        out.append(f"{who} ran with uncommitted changes (commit {commits}); the code compared is the text "
                   "stored in the record")
    for side, r in (("A", a), ("B", b)):
        if not r.check.passed:
            out.append(f"{side} failed its check: {r.check.message or 'see the record'}")
    if verdict is not None and verdict.p_value is None:
        out.append(f"few samples (n={verdict.n_a} / {verdict.n_b}): {verdict.reason}, so no verdict but the same "
                   "within noise")
    return out
