"""Records are checked for sense when loaded (the reliability issue's loader item): a run whose timing
cannot be true (a negative mean, a mean outside its own samples, statistics of no samples), a
record holding an integer literal too long to read, a named pipe or a loop of symbolic links under
logs/: each is left out with one warning naming the file (and the field), and the good records
around it still load, so `report list` and `report show` go on with them."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from conftest import ROOT, copy_tree
from typer.testing import CliRunner

from reporter import packed, store
from reporter.cli import app
from reporter.store import RecordError, RecordSkipped

runner = CliRunner()
V10 = ROOT / "logs" / "transform" / "v10_hw_cvt"
SOURCE = min(V10.glob("*_h100_benchmark.json.gz"))
STRAY = "20990101T000000000Z_h100_benchmark.json"  # the newest run of v10 on the benchmark case: what list shows


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with transform's records and the device ceilings (what `list` and `show` read)."""
    for name in ("kernels", "report_templates", "logs/transform", "logs/devices", "logs/sources"):
        copy_tree(ROOT / name, tmp_path / name)
    return tmp_path


def _stray(project: Path, edit) -> Path:
    """A copy of a committed v10 run, made the newest and edited, beside the good ones."""
    data = json.loads(store.read_text(SOURCE))
    data["run_id"] = Path(STRAY).stem
    data["created_utc"] = "2099-01-01T00:00:00Z"
    edit(data)
    p = project / "logs" / "transform" / "v10_hw_cvt" / STRAY
    p.write_text(json.dumps(data))
    return p


def _good(project: Path) -> list[str]:
    return sorted(store.stem(p) for p in (project / "logs" / "transform" / "v10_hw_cvt").glob("2026*.json.gz"))


def _runs_warned(project: Path, assignment: str = "transform", version: str | None = "v10_hw_cvt"):
    with pytest.warns(RecordSkipped) as caught:
        runs = store.runs(project / "logs", assignment, version)
    return runs, [str(w.message) for w in caught if issubclass(w.category, RecordSkipped)]


def _warnings_naming(stderr: str, name: str) -> list[str]:
    return [line for line in " ".join(stderr.split()).split("warning:") if name in line]


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(d):
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value(d) if callable(value) else value
    return edit


def _timing_as_lists(edit_samples):
    """The timing's samples written out as a list (as schema 1 wrote them, and a person edits them)."""
    def edit(d):
        t = d["timing"]
        t["samples_ms"] = packed.unpack(t["samples_ms"])
        edit_samples(t)
    return edit


NONSENSE = [
    ("negative mean", _set("timing", "mean_ms", -1.0), "timing.mean_ms' is -1.0: a time is a positive number"),
    ("mean below the samples", _set("timing", "mean_ms", lambda t: t["min_ms"] / 2),
     "timing.mean_ms' is 0.1857600063085556, outside the range of its samples"),
    ("mean above the samples", _set("timing", "mean_ms", lambda t: t["max_ms"] * 12),
     "outside the range of its samples"),
    ("negative median", _set("timing", "median_ms", -0.5), "timing.median_ms' is -0.5"),
    ("negative std", _set("timing", "std_ms", -0.01), "timing.std_ms' is -0.01: a spread is not negative"),
    ("quantile outside", _set("timing", "quantiles_ms", "p95", 99.0), "timing.quantiles_ms.p95' is 99.0, outside"),
    ("min above max", _set("timing", "min_ms", 1.0), "timing.min_ms' is 1.0, above max_ms"),
    ("n of zero", _set("timing", "n", 0), "timing.n' is 0: statistics of no samples"),
    ("no samples, packed", _set("timing", "samples_ms", packed.pack([])),
     "timing.samples_ms' holds 0 samples where n is 100"),
    ("no samples, a list", _set("timing", "samples_ms", []), "timing.samples_ms' holds 0 samples where n is 100"),
    ("n not the samples, a list", _timing_as_lists(lambda t: t.update(n=99)),
     "timing.samples_ms' holds 100 samples where n is 99"),
    ("min_ms not the samples' min", _timing_as_lists(lambda t: t.update(min_ms=t["min_ms"] + 1e-4)),
     "timing.min_ms' is 0.3716200126171112 where the samples' min is 0.3715200126171112"),
    ("a peer's negative mean", _set("peers", 0, "timing", "mean_ms", -1.0), "peers.0.timing.mean_ms' is -1.0"),
    ("a peer's empty samples", _set("peers", 2, "timing", "samples_ms", packed.pack([])),
     "peers.2.timing.samples_ms' holds 0 samples"),
]


def test_the_committed_source_is_what_the_cases_assume():
    r = store.load(SOURCE)
    assert r.timing.n == 100 and r.timing.min_ms == 0.3715200126171112 and len(r.peers) == 3  # type: ignore[union-attr]


@pytest.mark.parametrize("what,edit,said", NONSENSE, ids=[c[0] for c in NONSENSE])
def test_a_timing_that_cannot_be_true_is_left_out_naming_the_field(project, what, edit, said):
    good = _good(project)
    stray = _stray(project, edit)
    with pytest.raises(RecordError) as e:
        store.load(stray)
    assert str(e.value).startswith(f"{stray}: field '") and said in str(e.value)
    runs, warned = _runs_warned(project)
    assert sorted(r.run_id for r in runs) == good
    assert len(warned) == 1 and stray.name in warned[0] and warned[0].endswith("left out")


def test_packed_samples_not_as_many_as_n_are_refused_when_read(project):
    """Loading decodes no packed array (listing hundreds of runs reads none of their samples): one that
    holds another number of samples than its n is refused when first read, naming the file and field,
    as one holding a NaN is."""
    stray = _stray(project, _set("timing", "n", 99))
    run = store.load(stray)
    with pytest.raises(packed.PackedArrayError, match=rf"{stray.name}: field samples_ms: a packed array of 100 "
                                                      "numbers where the record's n is 99"):
        run.timing.samples_ms[0]  # type: ignore[union-attr]
    assert store.load(SOURCE).timing.samples_ms[0] > 0  # type: ignore[union-attr]


def test_list_show_and_diff_go_on_past_a_nonsense_timing(project):
    """The issue's cases: a mean of -1 ms (shown as '-1,000 µs' and '-205.64×') and an empty list of
    samples (`show` died in median_ci, `diff` printed a CI of 0 %): left out, one warning naming the
    file and field, the v10 row from the good runs."""
    for edit, said in ((_set("timing", "mean_ms", -1.0), "timing.mean_ms' is -1.0"),
                       (_set("timing", "samples_ms", []), "timing.samples_ms' holds 0 samples")):
        stray = _stray(project, edit)
        for args in (["list", "transform"], ["show", "transform", "v10"], ["diff", "transform", "v09", "v10"]):
            result = runner.invoke(app, [*args, "--root", str(project)])
            assert result.exit_code == 0, (args, result.output)
            assert "v10_hw_cvt" in result.stdout and "-1,000" not in result.stdout and "-1.000" not in result.stdout
            warning = _warnings_naming(result.stderr, stray.name)
            assert len(warning) == 1 and said in warning[0] and "left out" in warning[0], (args, result.output)


@pytest.mark.parametrize("field", ["seed", "n", "mean_ms", "sm_count"])
def test_an_integer_too_long_to_read_is_a_left_out_record(project, field):
    """5,000 digits: more than int() converts (sys.get_int_max_str_digits), which took down list,
    show and build with a ValueError instead of leaving the one file out."""
    text = store.read_text(SOURCE)
    head, tail = text.split(f'"{field}":', 1)
    stray = project / "logs" / "transform" / "v10_hw_cvt" / STRAY
    stray.write_text(head + f'"{field}":' + "9" * 5000 + tail[tail.index(","):])
    with pytest.raises(RecordError, match=rf"{stray.name}: field '{field}' is an integer literal of 5,000 digits"):
        store.load(stray)
    runs, warned = _runs_warned(project)
    assert sorted(r.run_id for r in runs) == _good(project) and len(warned) == 1 and "left out" in warned[0]
    for args in (["list", "transform"], ["show", "transform", "v10"]):
        result = runner.invoke(app, [*args, "--root", str(project)])
        assert result.exit_code == 0, (args, result.output)
        warning = _warnings_naming(result.stderr, stray.name)
        assert len(warning) == 1 and f"field '{field}'" in warning[0], result.output


def _within(seconds: float, fn, unblock: Path | None = None):
    """fn() in a thread that must finish within ``seconds``; a reader blocked on the FIFO ``unblock``
    is let go (its writer opened and closed) so that a failing test does not hang the session."""
    out: list = []

    def call():
        try:
            out.append((fn(), None))
        except BaseException as e:  # noqa: BLE001 -- raised again below, in the test's thread
            out.append((None, e))

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive() and unblock is not None:
        os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail(f"blocked on {unblock}")
    assert not t.is_alive()
    value, error = out[0]
    if error is not None:
        raise error
    return value


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_left_out_unopened(project):
    fifo = project / "logs" / "transform" / "v10_hw_cvt" / STRAY
    os.mkfifo(fifo)
    with pytest.raises(RecordError, match=rf"{fifo.name}: a named pipe \(FIFO\), not a file"):
        _within(10, lambda: store.load(fifo), unblock=fifo)
    runs, warned = _within(10, lambda: _runs_warned(project), unblock=fifo)
    assert sorted(r.run_id for r in runs) == _good(project)
    assert len(warned) == 1 and fifo.name in warned[0] and "named pipe" in warned[0]
    result = _within(30, lambda: runner.invoke(app, ["list", "transform", "--root", str(project)]), unblock=fifo)
    assert result.exit_code == 0 and "v10_hw_cvt" in result.stdout, result.output
    assert len(_warnings_naming(result.stderr, fifo.name)) == 1


def test_a_loop_of_symbolic_links_is_named_not_read_as_no_runs(project):
    """logs/histogram pointing to itself: a glob finds nothing there, and histogram read as 'no runs
    yet'; a version folder that loops hid that version the same way."""
    loop = project / "logs" / "histogram"
    os.symlink("histogram", loop)
    runs, warned = _runs_warned(project, "histogram", None)
    assert runs == [] and len(warned) == 1
    assert warned[0].startswith(f"{loop}: a symbolic link that loops") and "left out" in warned[0]
    version_loop = project / "logs" / "transform" / "v99_loop"
    os.symlink("v99_loop", version_loop)
    good = sorted(r.run_id for r in store.runs(ROOT / "logs", "transform"))
    runs, warned = _runs_warned(project, "transform", None)
    assert sorted(r.run_id for r in runs) == good
    assert len(warned) == 1 and warned[0].startswith(f"{version_loop}: a symbolic link that loops")
    _, warned = _runs_warned(project, "transform", "v99_loop")
    assert len(warned) == 1 and "v99_loop: a symbolic link that loops" in warned[0]
    result = runner.invoke(app, ["list", "--root", str(project)])
    assert result.exit_code == 0 and "v10_hw_cvt" in result.stdout, result.output
    assert len(_warnings_naming(result.stderr, f"{loop}: a symbolic link that loops")) == 1, result.output
    assert len(_warnings_naming(result.stderr, "v99_loop: a symbolic link that loops")) == 1, result.output


def test_a_symbolic_link_to_nothing_is_named(project):
    dangling = project / "logs" / "transform" / "v10_hw_cvt" / STRAY
    os.symlink("nowhere.json", dangling)
    runs, warned = _runs_warned(project)
    assert sorted(r.run_id for r in runs) == _good(project)
    assert len(warned) == 1 and "a symbolic link to 'nowhere.json', which does not exist" in warned[0]
