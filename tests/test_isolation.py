"""The worker process that kernels run in: a crash, a hang or a lost CUDA context loses one item,
says which and how, and the next call gets a fresh worker. On CPU, with a worker that speaks the
protocol (tests/fixtures/isolation/fake_worker.py); the GPU cases (a real illegal address, a
spinning kernel, out of memory) are in test_gpu_broken.py."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from conftest import with_sources

from reporter import sources
from reporter.harness.isolate import Worker, WorkerError, WorkerLost, describe_exit

FIXTURES = Path(__file__).parent / "fixtures" / "isolation"


def _worker(**kw):
    return Worker("fake_worker", cwd=FIXTURES, **kw)


def test_an_answer_and_its_messages_come_back():
    seen, out = [], []
    with _worker(on_output=out.append) as w:
        assert w.call(("ok", 21), seen.append) == 42
    assert ("say", "a line for the terminal", "info", "") in seen
    assert any(m[0] == "progress" for m in seen)
    assert not any(m[0] in ("item", "answer") for m in seen)  # the protocol's own messages stay inside
    assert "working on 21" in "".join(out)  # what the worker printed reaches the terminal


def test_a_crash_names_the_item_the_signal_and_the_last_lines_then_a_fresh_worker_goes_on():
    with _worker() as w:
        assert w.call(("ok", 1), lambda m: None) == 2
        with pytest.raises(WorkerLost) as info:
            w.call(("segv", "v03"), lambda m: None)
        lost = info.value
        assert lost.item == ("segv", "case", "v03") and lost.detail == {"started": "segv"}
        assert lost.how == "died of SIGSEGV" and not lost.timed_out
        assert lost.tail[-1] == "about to crash"
        text = lost.explain("v03 on test_small")
        assert text.startswith("v03 on test_small: the process running it died of SIGSEGV")
        assert "about to crash" in text
        assert w.call(("ok", 5), lambda m: None) == 10
        assert w.started == 2


def test_an_exit_status_and_a_traceback_in_the_tail():
    with _worker() as w, pytest.raises(WorkerLost) as info:
        w.call(("exit1", "v04"), lambda m: None)
    assert info.value.how == "exited with status 1"
    assert any("illegal memory access" in line for line in info.value.tail)


def test_a_hang_is_ended_at_its_budget_with_its_process_group():
    with _worker() as w:
        t0 = time.monotonic()
        with pytest.raises(WorkerLost) as info:
            w.call(("hang", "v05", 1.5), lambda m: None)
        took = time.monotonic() - t0
        lost = info.value
        assert lost.timed_out and lost.how == "ran past its 1.5 s budget"
        assert 1.4 < took < 15
        assert "did not finish within its 1.5 s budget and was stopped" in lost.explain("v05 on benchmark")
        assert "--timeout-s" in lost.explain("v05 on benchmark")
        grandchild = int(next(line for line in lost.tail if line.startswith("grandchild")).split()[1])
        for _ in range(50):  # the sleep the worker started went down with it (its process group)
            if not _alive(grandchild):
                break
            time.sleep(0.1)
        assert not _alive(grandchild)
        assert w.call(("ok", 4), lambda m: None) == 8


def test_a_lost_context_answers_then_ends_the_worker():
    seen = []
    with _worker() as w:
        assert w.call(("lost_context", "value"), seen.append) == "value"
        assert seen[-1][0] == "exit" and "CUDA context" in seen[-1][1]
        assert w.proc is None  # ended: the next call starts a fresh one
        assert w.call(("ok", 1), seen.append) == 2 and w.started == 2


def test_a_task_that_cannot_be_done_is_one_clear_error():
    with _worker() as w, pytest.raises(WorkerError, match="no such version: v99"):
        w.call(("error",), lambda m: None)


def test_a_fresh_worker_is_opened_before_its_first_task():
    opened = []

    def on_start(w):
        opened.append(w.proc.pid)

    with _worker(on_start=on_start) as w:
        w.call(("ok", 1), lambda m: None)
        with pytest.raises(WorkerLost):
            w.call(("segv", "x"), lambda m: None)
        w.call(("ok", 1), lambda m: None)
    assert len(opened) == 2 and opened[0] != opened[1]


def test_exit_descriptions():
    assert describe_exit(-11) == "died of SIGSEGV"
    assert describe_exit(-6) == "died of SIGABRT"
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(None) == "stopped answering"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


# --------------------------------------------------------------------------- the run around the worker

ROOT = Path(__file__).resolve().parents[1]


class _ScriptedWork:
    """Stands for run.py's _Work: answers the tasks of report run from a script, without a GPU."""

    def __init__(self, a, script):
        from reporter import store

        self.a, self.script, self.calls = a, script, []
        ceil_path = sorted((ROOT / "logs" / "devices" / "h100").glob("*.json.gz"))[0]
        c = store.load(ceil_path)
        self.info = c.device
        self.ceilings = ("devices/h100/x.json", c)

    def __call__(self, params, isolate, progress, console):
        from dataclasses import replace

        self.params = replace(params, ceilings=self.ceilings)
        return self

    def call(self, task):
        from reporter.harness.jobs import new_run
        from reporter.records import PeerResult

        self.calls.append(task)
        if task[0] == "interleaved":
            return self._interleaved(*task[1:])
        act = self.script.get(task[:3] if len(task) >= 3 else task, "ok")
        if isinstance(act, BaseException):
            raise act
        if task[0] == "version":
            v = self.a.version(task[2])
            r = new_run(self.a, v, None, task[1], self.a.case(task[1]), self.info, self.params.session,
                           self.params.command, ROOT, self.ceilings[0])
            r.error = "check failed, not timed: scripted"
            return r
        if task[0] == "peer":
            return PeerResult(name=task[2], error="scripted")
        return None

    def _interleaved(self, case, names, peers):
        from reporter.harness.jobs import new_run

        act = self.script.get(("interleaved", len(self.calls)))
        if isinstance(act, BaseException):
            raise act
        runs = []
        for name in names:
            r = new_run(self.a, self.a.version(name), None, case, self.a.case(case), self.info,
                           self.params.session, self.params.command, ROOT, self.ceilings[0])
            r.error = f"timed with {len(names)}"
            runs.append(r)
        return runs, []

    def close(self):
        self.closed = True


def _scripted_run(monkeypatch, tmp_path, script, versions=("v01", "v02", "v03")):
    from reporter.assignments import get_assignment
    from reporter.harness import run as R
    from reporter.harness.jobs import RunOptions

    a = get_assignment(ROOT / "kernels", "histogram")
    work = _ScriptedWork(a, script)
    monkeypatch.setattr(R, "_Work", work)
    monkeypatch.setattr(R, "require_cuda", lambda: None)
    vs = [a.version(v) for v in versions]
    opts = RunOptions(write=True, peers=True)
    return a, vs, work, lambda: R.run(ROOT, tmp_path, a, vs, ["test_small"], opts)


def test_a_lost_version_gets_its_record_and_the_next_versions_run(monkeypatch, tmp_path):
    from reporter import store

    lost = WorkerLost(item=("version", "test_small", "v02_smem_privatized"), how="died of SIGSEGV",
                      tail=["Segmentation fault (core dumped)"])
    a, vs, work, go = _scripted_run(monkeypatch, tmp_path, {("version", "test_small", "v02_smem_privatized"): lost})
    written = go()
    assert len(written) == 3 and getattr(work, "closed", False)
    runs = {r.version: r for r in map(store.load, written)}
    bad = runs["v02_smem_privatized"]
    assert bad.error.startswith("v02_smem_privatized on test_small: the process running it died of SIGSEGV")
    assert "Segmentation fault (core dumped)" in bad.error and bad.timing is None
    assert runs["v03_word_loads"].error == "check failed, not timed: scripted"  # the next one ran
    assert [p.name for p in bad.peers] == list(a.spec.PEERS)  # the case's peers, as every run of it


def test_a_hang_is_recorded_as_one(monkeypatch, tmp_path):
    from reporter import store

    lost = WorkerLost(item=("version", "test_small", "v01_global_atomics"), how="ran past its 300 s budget",
                      timed_out=True)
    _, _, _, go = _scripted_run(monkeypatch, tmp_path, {("version", "test_small", "v01_global_atomics"): lost})
    runs = {r.version: r for r in map(store.load, go())}
    assert "did not finish within its 300 s budget and was stopped" in runs["v01_global_atomics"].error


def test_ctrl_c_keeps_the_finished_records_whole_and_leaves_no_partial_file(monkeypatch, tmp_path):
    _, _, _, go = _scripted_run(monkeypatch, tmp_path, {("version", "test_small", "v03_word_loads"): KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        go()
    rels = [p.relative_to(tmp_path).parts for p in tmp_path.rglob("*") if p.is_file()]
    files = sorted(parts[1] for parts in rels if parts[0] != "sources")
    assert files == ["v01_global_atomics", "v02_smem_privatized"]  # whole records, no .tmp beside them
    texts = [tmp_path.joinpath(*parts) for parts in rels if parts[0] == "sources"]
    assert texts and all(hashlib.sha256(sources.blob_text_bytes(p.name, p.read_bytes())).hexdigest()
                         == sources.blob_name_sha(p.name) for p in texts)  # their code, whole


def test_two_runs_of_one_version_in_one_millisecond_write_two_files(tmp_path):
    import threading

    from reporter import store

    base = store.load(next((ROOT / "logs" / "histogram" / "v05_persistent").glob("*.json.gz")))
    logs = with_sources(tmp_path)
    paths: list[Path] = []

    def write():
        for _ in range(10):
            paths.append(store.save_new(base.model_copy(deep=True), logs))

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 40 and len(list(tmp_path.rglob("*.json.gz"))) == 40
    assert not list(tmp_path.rglob("*.tmp"))
    for p in paths:  # each file's id is its name
        assert store.load(p).run_id == store.stem(p)


def test_interleaved_a_lost_check_is_tried_again_without_it_and_lost_rounds_lose_the_case(monkeypatch, tmp_path):
    from reporter import store
    from reporter.harness import run as R
    from reporter.harness.jobs import RunOptions

    check = WorkerLost(item=("version", "test_small", "v02_smem_privatized"), how="died of SIGABRT")
    a, vs, work, _ = _scripted_run(monkeypatch, tmp_path, {("interleaved", 1): check})
    opts = RunOptions(write=True, peers=False, interleave=True)
    runs = {r.version: r for r in map(store.load, R.run(ROOT, tmp_path, a, vs, ["test_small"], opts))}
    assert [c[2] for c in work.calls if c[0] == "interleaved"] == [
        [v.name for v in vs], ["v01_global_atomics", "v03_word_loads"]]
    assert runs["v01_global_atomics"].error == runs["v03_word_loads"].error == "timed with 2"
    assert "died of SIGABRT" in runs["v02_smem_privatized"].error

    rounds = WorkerLost(item=("rounds", "test_small", "rounds"), how="ran past its 900 s budget", timed_out=True)
    a, vs, work, _ = _scripted_run(monkeypatch, tmp_path / "2", {("interleaved", 1): rounds})
    runs = list(map(store.load, R.run(ROOT, tmp_path / "2", a, vs, ["test_small"], opts)))
    assert len(runs) == 3 and len([c for c in work.calls if c[0] == "interleaved"]) == 1
    assert all("the interleaved rounds of test_small" in r.error and "900 s" in r.error for r in runs)


def test_a_worker_ends_with_its_parent(tmp_path):
    """A parent killed from outside (a time limit's SIGKILL) takes its worker with it, even one
    stuck in a task that never ends."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(
        "import time\n"
        "from reporter.harness.isolate import Worker\n"
        f"w = Worker('fake_worker', cwd={str(FIXTURES)!r})\n"
        "w.start()\n"
        "w.conn.send(('hang', 'v08', 600))\n"
        "print(w.proc.pid, flush=True)\n"
        "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    time.sleep(0.5)
    assert _alive(worker)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(100):
        if not _alive(worker):
            break
        time.sleep(0.1)
    assert not _alive(worker)


def test_a_raising_version_is_shown_from_its_own_frames():
    import torch
    from types import SimpleNamespace

    from reporter.assignments import Tolerance
    from reporter.harness import worker

    def custom_kernel(x):
        raise ValueError("index [j] out of range")

    spec = SimpleNamespace(TOLERANCE=Tolerance(rtol=0, atol=0))
    with pytest.raises(ValueError) as info:
        worker.check_once(custom_kernel, torch.zeros(2), torch.zeros(2), spec, 1, ("a", "v01"))
    text = worker.user_traceback(info.value)
    assert "in custom_kernel" in text and "harness/worker.py" not in text
    assert text.endswith("ValueError: index [j] out of range")


def test_failures_are_listed_under_the_table_one_line_each(monkeypatch, tmp_path):
    from reporter import store
    from reporter.render.text import failure_lines

    lost = WorkerLost(item=("version", "test_small", "v02_smem_privatized"), how="died of SIGSEGV", tail=["x[j]"])
    _, _, _, go = _scripted_run(monkeypatch, tmp_path, {("version", "test_small", "v02_smem_privatized"): lost})
    runs = [store.load(p) for p in go()]
    lines = failure_lines(runs)
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    assert lines[1].startswith("[red]FAIL[/red] v02_smem_privatized on test_small: v02_smem_privatized on test_small: "
                               "the process running it died of SIGSEGV")


TOY_ASSIGNMENT = '''
"""y = 2x on the CPU: enough to drive the real worker's Session without a GPU."""
from reporter.assignments import Peer, Tolerance
from reporter.records import WorkModel

TITLE = "toy"
CASES = {"small": {"n": 64, "seed": 3}}
BENCHMARK_CASE = "small"
TOLERANCE = Tolerance(rtol=1e-6, atol=1e-6)
PEERS = {"eager": Peer(lambda x: x * 2, "torch eager")}
REFERENCE_RESULTS: list = []


def generate_input(n, seed):
    import torch

    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def ref_kernel(x):
    return x * 2


def work_model(n, seed):
    return WorkModel(flops=float(n), bytes=float(8 * n), ceiling="copy", description="x read, y written")
'''


class _CpuTimer:
    method = "fake"

    def time_call(self, fn, before):
        fn()
        return 1.0


class _Heard:
    """Events that keep what they hear, with bars that keep their calls."""

    def __init__(self):
        from reporter.harness.events import NoProgress

        self.said, self.outputs, self.written, self.bars = [], [], [], NoProgress()

    def run_written(self, run, device):
        self.written.append(run)

    def profiled(self, run):
        pass

    def runs_done(self, runs):
        pass

    def sweep_written(self, sweep):
        pass

    def say(self, text, level="info", detail=""):
        self.said.append((text, level, detail))

    def output(self, text):
        self.outputs.append(text)

    def status(self, text):
        from contextlib import nullcontext

        self.said.append((text, "step", ""))
        return nullcontext(lambda text: None)

    def progress(self):
        from contextlib import nullcontext

        return nullcontext(self.bars)


TOY_SWEEP = '''"""Multiplies by k: only k=2 is right."""

SWEEP = [{"k": 2}, {"k": 3}]
CONFIG = SWEEP[0]


def make_kernel(config):
    return lambda x: x * config["k"]


custom_kernel = make_kernel(CONFIG)
'''


@pytest.fixture
def cpu_toy(monkeypatch, tmp_path):
    """A toy assignment on CPU tensors, and the worker's device stubbed (no CUDA, a timer that
    calls and says 1 ms, the ceilings of a committed record): the real Session does the rest."""
    from reporter import store
    from reporter.assignments import get_assignment
    from reporter.harness import run as R
    from reporter.harness import worker

    folder = tmp_path / "kernels" / "toy"
    folder.mkdir(parents=True)
    (folder / "assignment.py").write_text(TOY_ASSIGNMENT)
    (folder / "v01_double.py").write_text('"""Doubles."""\n\ndef custom_kernel(x):\n    return x * 2\n')
    (folder / "v02_raises.py").write_text('"""Not written yet."""\n\ndef custom_kernel(x):\n'
                                          '    raise NotImplementedError("the second pass")\n')
    (folder / "v03_tunable.py").write_text(TOY_SWEEP)
    ceilings = store.load(sorted((ROOT / "logs" / "devices" / "h100").glob("*.json.gz"))[0])
    for mod in (R, worker):
        monkeypatch.setattr(mod, "require_cuda", lambda: None)
    monkeypatch.setattr(worker, "device_info", lambda: ceilings.device)
    monkeypatch.setattr(worker, "ensure_ceilings", lambda logs, info, events, remeasure, write=True:
                        ("devices/h100/x.json", ceilings))
    monkeypatch.setattr(worker, "L2Flusher", lambda nbytes: None)
    monkeypatch.setattr(worker, "make_timer", lambda hold: _CpuTimer())
    monkeypatch.setattr(worker, "open_sampler", lambda: None)
    return get_assignment(tmp_path / "kernels", "toy")


def _cpu_run(a, tmp_path, **opts):
    from reporter import store
    from reporter.harness import run as R
    from reporter.harness.jobs import RunOptions
    from reporter.harness.timing import StoppingRule

    heard = _Heard()
    rule = StoppingRule(min_reps=3, max_reps=3, warmup_reps=1, budget_s=60)
    vs = [a.version("v01"), a.version("v02")]
    written = R.run(tmp_path, tmp_path / "logs", a, vs, ["small"], RunOptions(rule=rule, isolate=False, **opts),
                    events=heard)
    return {r.version: r for r in map(store.load, written)}, heard


def test_a_run_in_this_process_goes_through_the_real_worker_session_on_the_cpu(cpu_toy, tmp_path):
    """--no-isolate: the parent reaches the worker module by its name (isolate.InProcess), and the
    Session's tasks (open, peer, version, free) run the real check and timing on CPU tensors with
    the device stubbed; what the worker says (a version that raised, with its traceback) reaches the
    parent's events as a line, and every record is written."""
    runs, heard = _cpu_run(cpu_toy, tmp_path)
    assert sorted(runs) == ["v01_double", "v02_raises"] and [r.version for r in heard.written] == sorted(runs)
    ok, bad = runs["v01_double"], runs["v02_raises"]
    assert ok.check.passed and ok.timing is not None and ok.timing.n == 3 and ok.error is None
    assert [p.name for p in ok.peers] == ["eager"] and ok.peers[0].timing is not None
    assert bad.error.startswith("NotImplementedError: the second pass") and bad.timing is None
    assert ("toy/small: drawing input and reference", "step", "") in heard.said
    (raised,) = [s for s in heard.said if s[1] == "error"]
    assert raised[0] == "v02_raises on small raised" and "in custom_kernel" in raised[2]
    assert "NotImplementedError: the second pass" in raised[2] and "harness/worker.py" not in raised[2]


def test_interleaved_and_ranked_in_this_process_on_the_cpu(cpu_toy, tmp_path):
    """The interleaved task (versions and peers checked, then timed in rounds) and the ranked
    re-checks on fresh seeded inputs, through the real Session."""
    runs, heard = _cpu_run(cpu_toy, tmp_path, interleave=True, ranked=True)
    ok, bad = runs["v01_double"], runs["v02_raises"]
    assert ok.timing is not None and ok.timing.interleaved and ok.timing.ranked and ok.timing.n == 3
    assert len(ok.ranked_checks) == 3 and all(c.passed for c in ok.ranked_checks)
    assert len({c.seed for c in ok.ranked_checks}) == 3
    assert [p.name for p in ok.peers] == ["eager"] and ok.peers[0].timing is not None
    assert bad.error.startswith("NotImplementedError") and bad.timing is None
    assert any(s[0] == "v02_raises on small raised" and s[1] == "error" for s in heard.said)


def test_a_sweep_in_this_process_on_the_cpu(cpu_toy, tmp_path):
    from reporter import store
    from reporter.harness import run as R
    from reporter.harness.timing import StoppingRule

    heard = _Heard()
    path = R.sweep(tmp_path, tmp_path / "logs", cpu_toy, cpu_toy.version("v03"), "small",
                   StoppingRule(min_reps=3, max_reps=3, warmup_reps=1, budget_s=60), events=heard, isolate=False)
    s = store.load(path)
    assert s.chosen == {"k": 2} and s.timing_order == "interleaved"
    right, wrong = s.points
    assert right.timing is not None and right.timing.n == 3 and wrong.timing is None
    assert "outside tolerance" in (wrong.error or "")
