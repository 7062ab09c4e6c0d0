"""`report run --quick` (the harness's loop for a look: nothing written) and ``PROBES`` (pieces of a
kernel timed alone, unchecked): on the CPU with fakes, and on a GPU (marker ``gpu``) the real
thing on histogram and flashattn."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from reporter import store
from reporter.assignments import Probe
from reporter.cli import app
from reporter.harness.jobs import RunOptions
from reporter.harness.timing import StoppingRule, benchmark
from reporter.records import ProbeResult, TimingStats

ROOT = Path(__file__).resolve().parents[1]
RULE = StoppingRule(min_reps=4, max_reps=4, target_rel_stderr=1e-9, budget_s=60, warmup_reps=1)
runner = CliRunner()


class _Timer:
    method = "fake"

    def time_call(self, fn, before):
        fn()
        return 1.0


class _Progress:
    def add_task(self, *a, **k):
        return 0

    def update(self, *a, **k):
        pass


def _fake_harness(monkeypatch):
    from reporter.harness import worker

    seen = []
    monkeypatch.setattr(worker, "free_memory", lambda: None)
    monkeypatch.setattr(worker, "_sync", lambda: None)

    def fake_time(fn, data, *, opts, **kw):
        seen.append(opts)
        return benchmark(lambda rep: fn(data), timer=_Timer(), rule=opts.rule, ranked=opts.ranked)

    monkeypatch.setattr(worker, "time_callable", fake_time)
    return worker, seen


def test_probes_are_timed_unranked_and_a_failing_one_is_recorded(monkeypatch):
    worker, seen = _fake_harness(monkeypatch)
    calls = []

    def reads(data):
        calls.append(data)

    def wrong_case(data):
        raise ValueError("600 channels is not a multiple of the 128-byte strip")

    spec = SimpleNamespace(PROBES={"reads": Probe(reads, "read only"), "strips": Probe(wrong_case, "strips")})
    a = SimpleNamespace(name="fake", spec=spec)
    opts = RunOptions(ranked=True, hold=False, rule=RULE)
    reads_r, strips_r = worker._time_probes(a, {"seed": 1}, "input", opts, None, None, _Progress(), None)
    # one untimed first call, one warm-up, four timed: every one on the case's own input
    assert calls == ["input"] * 6
    assert [o.ranked for o in seen] == [False]  # a probe's output is not the answer: nothing to re-check
    assert reads_r.timing is not None and reads_r.timing.n == 4 and reads_r.error is None
    assert strips_r.timing is None and strips_r.error.startswith("ValueError: 600 channels")
    assert strips_r.description == "strips"


def test_a_run_record_keeps_its_probes_and_older_records_still_load():
    path = next((ROOT / "logs" / "histogram").glob("v05_*/*.json.gz"))
    run = store.load(path)
    assert run.probes == []  # made before probes were kept
    t = TimingStats.model_validate(run.timing.model_dump()) if run.timing else None
    run.probes = [ProbeResult(name="reads", description="read only", timing=t),
                  ProbeResult(name="atoms", error="CudaCompileError: no kernel")]
    again = type(run).model_validate_json(run.model_dump_json())
    assert again.probes == run.probes


def _captured_run(monkeypatch):
    from reporter.harness import run as run_mod

    got = {}

    def fake_run(repo, logs, a, versions, cases, opts, events=None):
        got.update(opts=opts, versions=[v.name for v in versions], cases=cases, events=events)
        return []

    monkeypatch.setattr(run_mod, "run", fake_run)
    return got


def test_quick_is_the_same_loop_with_at_most_twenty_calls_no_rest_and_nothing_written(monkeypatch):
    got = _captured_run(monkeypatch)
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--quick", "--root", str(ROOT)])
    assert res.exit_code == 0, res.output
    opts = got["opts"]
    assert not opts.write and (opts.rule.min_reps, opts.rule.max_reps) == (10, 20) and opts.rule.rest_s == 0
    assert "nothing written" in res.output
    assert got["events"].written is False  # its table says the runs were not written

    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--quick", "--max-reps", "50",
                              "--rest-s", "1", "--root", str(ROOT)])
    assert res.exit_code == 0, res.output
    opts = got["opts"]
    assert opts.rule.min_reps == 10 and opts.rule.max_reps == 50 and opts.rule.rest_s == 1.0


def test_a_full_run_keeps_its_defaults(monkeypatch):
    """The course's rule (100 calls at most; 0.1 % standard error, 10 s of timed calls, 120 s) above our floor
    (10 calls spanning 2 s), after a 3 s rest; --min-reps 100 gives every version the same 100 calls."""
    got = _captured_run(monkeypatch)
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--root", str(ROOT)])
    assert res.exit_code == 0, res.output
    r = got["opts"].rule
    assert got["opts"].write and r.rest_s == 3.0 and not got["opts"].probes
    assert (r.min_reps, r.max_reps, r.target_rel_stderr, r.budget_s, r.wall_s, r.min_span_s) == (10, 100, 1e-3, 10.0,
                                                                                                  120.0, 2.0)
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--min-reps", "100", "--root",
                              str(ROOT)])
    assert res.exit_code == 0 and got["opts"].rule.min_reps == got["opts"].rule.max_reps == 100
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "--min-reps", "30", "--max-reps", "20", "--root",
                              str(ROOT)])
    assert res.exit_code != 0 and "--max-reps (20) is below --min-reps (30)" in res.output

    res = runner.invoke(app, ["run", "histogram", "-c", "benchmark", "--probes", "--root", str(ROOT)])
    assert res.exit_code == 0 and got["opts"].probes


def test_probes_on_an_assignment_without_them_is_a_clear_error(monkeypatch):
    _captured_run(monkeypatch)
    res = runner.invoke(app, ["run", "flashattn", "-v", "v01", "--probes", "--root", str(ROOT)])
    assert res.exit_code == 2
    assert "--probes" in res.output and "flashattn/assignment.py defines no PROBES" in res.output


def test_histogram_declares_its_probes_as_the_harness_reads_them():
    from reporter.assignments import get_assignment

    a = get_assignment(ROOT / "kernels", "histogram")
    probes = a.spec.PROBES
    assert set(probes) == {"probe_read_w4", "probe_read_w8", "probe_read_w16", "probe_read_w16_t512",
                           "probe_read_bulk4", "probe_read_bulk6", "probe_no_atomics", "probe_atoms_bin_major",
                           "probe_atoms_channel_major", "probe_count_only", "probe_flush_only"}
    assert all(isinstance(p, Probe) and p.description for p in probes.values())
    src = "".join((ROOT / "kernels" / "histogram" / f).read_text() for f in ("probes.cu", "probes_flush.cu"))
    assert all(f"\n{name}(" in src for name in probes)  # each names a kernel of probes.cu or probes_flush.cu


def test_the_probes_table_shows_errors_and_shares():
    from rich.console import Console

    from reporter.render.tables import probes_table

    path = next((ROOT / "logs" / "histogram").glob("v05_*/*.json.gz"))
    run = store.load(path)
    assert run.timing is not None
    half = run.timing.model_copy(update={"mean_ms": run.timing.mean_ms / 2})
    probes = [ProbeResult(name="reads", description="read only", timing=half),
              ProbeResult(name="atoms", description="atomics", error="ValueError: not this case")]
    console = Console(width=160, record=True)
    console.print(probes_table(probes, run.case_name, against=run))
    text = console.export_text()
    assert "reads" in text and "50 %" in text and "ValueError: not this case" in text


def test_one_timing_loop():
    """reporter/harness/timing.py is the repository's one timing loop: nothing else under kernels/,
    tools/ or reporter/ records CUDA events of its own."""
    offenders = []
    for folder in ("kernels", "tools", "reporter"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if ("elapsed_time(" in text or "Event(enable_timing" in text) and path.name != "timing.py":
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# --------------------------------------------------------------------------- on the GPU



@pytest.mark.gpu
def test_quick_run_with_probes_on_the_gpu_writes_nothing(tmp_path, cuda):
    import shutil

    shutil.copytree(ROOT / "logs" / "devices", tmp_path / "devices")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--quick", "--probes",
                              "--max-reps", "5", "--logs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert "runs (quick: not written)" in res.output and "probes on test_small" in res.output
    assert "probe_read_w4" in res.output and "probe_atoms_bin_major" in res.output


@pytest.mark.gpu
def test_a_run_with_probes_records_them(tmp_path, cuda):
    res = runner.invoke(app, ["run", "histogram", "-v", "v05", "-c", "test_small", "--probes", "--max-reps", "5",
                              "--min-reps", "5", "--rest-s", "0", "--logs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (path,) = list((tmp_path / "histogram" / "v05_persistent").glob("*.json.gz"))
    run = store.load(path)
    assert run.ok and len(run.probes) == 6
    assert all(p.timing is not None and p.timing.n == 5 and not p.timing.ranked for p in run.probes), run.probes
