"""A version that runs only some of its assignment's cases (``CASES_WHERE``), on a toy assignment in a
temporary folder (CPU only): how the filter is read and checked, which cases the harness runs, the
version's headline case, and a report, `list`, `show` and `diff` built over records of it."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import fmean, median, stdev

import pytest
from typer.testing import CliRunner

from conftest import LOGS
from reporter import store
from reporter.assignments import (Assignment, AssignmentError, benchmark_cases_of, get_assignment, headline_case,
                                  read_cases_where)
from reporter.cli import app
from reporter.records import Run
from reporter.standing import comparison_case

runner = CliRunner(env={"COLUMNS": "160"})

ASSIGNMENT = '''
"""A toy: the product of two n x n matrices in one of two dtypes, as matmul's cases are."""
from reporter.assignments import Tolerance
from reporter.records import WorkModel

TITLE = "toy matmul"
CASES = {
    "test_64": dict(n=64, dtype="float32", seed=1),
    "test_64_fp16": dict(n=64, dtype="float16", seed=1),
    "benchmark": dict(n=1024, dtype="float32", seed=1),
    "benchmark_fp16": dict(n=1024, dtype="float16", seed=1),
}
BENCHMARK_CASES = ["benchmark", "benchmark_fp16"]
TOLERANCE = Tolerance(rtol=1e-3, atol=1e-3)
PEERS = {}
REFERENCE_RESULTS = []


def generate_input(n, dtype, seed):
    raise NotImplementedError("never called on the CPU")


def ref_kernel(data):
    raise NotImplementedError


def work_model(n, dtype, seed=1):
    return WorkModel(flops=2.0 * n**3, bytes=3.0 * n * n * (2 if dtype == "float16" else 4),
                     ceiling="matmul_fp16" if dtype == "float16" else "matmul_fp32")
'''

VERSIONS = {
    "v01_naive.py": '"""One thread per output, in either dtype."""\n\ndef custom_kernel(data):\n    return data\n',
    # the tensor-core version: fp16 only (fp32 on tensor cores would be TF32, another precision)
    "v02_tensor_cores.py": '"""Tensor cores: fp16 only."""\n\nCASES_WHERE = {"dtype": "float16"}\n\n'
                           'def custom_kernel(data):\n    return data\n',
    # a version of the fp32 cases alone: it shares no benchmark case with v02
    "v03_fp32_only.py": '"""fp32 alone."""\n\nCASES_WHERE: dict = {"dtype": "float32"}\n\n'
                        'def custom_kernel(data):\n    return data\n',
}

WORKLOG = """---
title: "Toy matmul"
authors: [Tester]
gpu: NVIDIA H100 80GB HBM3
---

## v01_naive

### What we concluded

It takes {{ v01.ms }} ms.

## v02_tensor_cores

### What we concluded

It takes {{ v02.ms }} ms on its headline case, {{ v02.headline_case }}, {{ v02.speedup_over('v01') }}× v01's time there.

## v03_fp32_only

### What we concluded

It takes {{ v03.ms }} ms.

## Why we stopped

A toy.

## How LLMs helped

Not at all.
"""

# the figures (mean ms) recorded for each version on each case it ran, all in one session
FIGURES = {
    "v01_naive": {"test_64": 0.02, "test_64_fp16": 0.03, "benchmark": 4.0, "benchmark_fp16": 3.0},
    "v02_tensor_cores": {"test_64_fp16": 0.01, "benchmark_fp16": 0.5},
    "v03_fp32_only": {"test_64": 0.015, "benchmark": 2.0},
}
SESSION = "20261201T100000000Z"


def _toy(root: Path, versions: dict[str, str] | None = None, assignment: str = ASSIGNMENT) -> Assignment:
    folder = root / "kernels" / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "assignment.py").write_text(assignment.lstrip())
    for name, text in (VERSIONS if versions is None else versions).items():
        (folder / name).write_text(text)
    (folder / "worklog.md").write_text(WORKLOG)
    return get_assignment(root / "kernels", "toy")


def _base() -> Run:
    for gpu_runs in (store.runs(LOGS, "matmul", case="benchmark"), store.runs(LOGS, "flashattn", case="benchmark")):
        found = [r for r in gpu_runs if r.timing is not None and r.ok and r.device.slug == "h100"]
        if found:
            return found[-1]
    pytest.skip("no committed H100 run to copy the device and timing fields from")


def _record(base: Run, a: Assignment, version: str, case_name: str, mean_ms: float, minute: int) -> Run:
    """A run of the toy's version on a case, as `report run` would have written it (samples spread ±2 %)."""
    v = a.version(version)
    samples = [mean_ms * (1 + 0.01 * (k % 5 - 2)) for k in range(100)]  # the mean is mean_ms
    t = base.timing.model_copy(update={
        "samples_ms": samples, "n": len(samples), "mean_ms": fmean(samples), "median_ms": median(samples),
        "std_ms": stdev(samples), "stderr_ms": stdev(samples) / len(samples) ** 0.5, "min_ms": min(samples),
        "max_ms": max(samples), "enqueue_ms": [], "gpu_state": None, "ranked": False, "interleaved": False,
        # the copied run's quantile keys ('p95', ...), of these samples: a record's statistics are its samples'
        "quantiles_ms": {k: sorted(samples)[round(float(k.lstrip("p")) / 100 * (len(samples) - 1))]
                         for k in base.timing.quantiles_ms}})
    created = datetime(2026, 12, 1, 10, tzinfo=timezone.utc) + timedelta(minutes=minute)
    case = dict(a.cases()[case_name])
    return base.model_copy(update={
        "assignment": "toy", "version": version, "case_name": case_name, "case": case, "seed": case["seed"],
        "run_id": f"{store.utc_stamp(created)}_h100_{case_name}", "session_id": SESSION, "created_utc": created,
        "code": v.snapshot(a.path.parents[1]), "timing": t, "work": a.spec.work_model(**case), "derived": None,
        "peers": [], "probes": [], "profile": None, "builds": [], "ranked_checks": [], "ceilings_ref": None,
        "command": f"report run toy -v {v.short}", "error": None})


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toy-cases")
    a = _toy(root)
    base = _base()
    minute = 0
    for version, figures in FIGURES.items():
        for case_name, ms in figures.items():
            minute += 1
            store.save_new(_record(base, a, version, case_name, ms, minute), root / "logs")
    return root


def report(*args: str | Path, root: Path):
    return runner.invoke(app, [*map(str, args), "--root", str(root)])


def _one_line(result) -> str:  # noqa: ANN001
    return " ".join(result.output.split())


# --------------------------------------------------------------------------- reading CASES_WHERE


def test_cases_where_is_read_from_the_source_without_importing_it(tmp_path):
    path = tmp_path / "v05_x.py"
    path.write_text('import torch  # not importable here: the file is never imported\n'
                    'CASES_WHERE = {"dtype": "float16", "n": 4096}\n')
    assert read_cases_where(path) == {"dtype": "float16", "n": 4096}
    path.write_text('CASES_WHERE: dict[str, str] = {"dtype": "float16"}\n')
    assert read_cases_where(path) == {"dtype": "float16"}
    path.write_text('"""No filter."""\n')
    assert read_cases_where(path) == {}


@pytest.mark.parametrize("text", ['CASES_WHERE = dict(dtype="float16")\n',
                                  'HALF = "float16"\nCASES_WHERE = {"dtype": HALF}\n',
                                  'CASES_WHERE = ["float16"]\n', 'CASES_WHERE = {1: "float16"}\n'],
                         ids=["call", "name", "list", "int-key"])
def test_cases_where_that_is_no_literal_dict_is_an_error_naming_file_line_and_field(tmp_path, text):
    path = tmp_path / "v05_x.py"
    path.write_text(text)
    with pytest.raises(AssignmentError) as e:
        read_cases_where(path)
    line = text.count("\n", 0, text.index("CASES_WHERE")) + 1
    assert str(e.value).startswith(f"{path}:{line}: CASES_WHERE must be a literal dict")


def test_cases_where_keeps_the_matching_cases_and_names_bad_parameters(tmp_path):
    a = _toy(tmp_path)
    assert a.cases_of(a.version("v01")) == ["test_64", "test_64_fp16", "benchmark", "benchmark_fp16"]
    assert a.cases_of(a.version("v02")) == ["test_64_fp16", "benchmark_fp16"]
    assert a.runs_case(a.version("v02"), "benchmark_fp16") and not a.runs_case(a.version("v02"), "benchmark")

    bad = a.path / "v04_typo.py"
    bad.write_text('CASES_WHERE = {"dtpye": "float16"}\n')
    with pytest.raises(AssignmentError) as e:
        a.cases_of(a.version("v04"))
    assert str(e.value) == (f"{bad}: CASES_WHERE names 'dtpye', not a parameter of the cases of "
                            f"{a.path / 'assignment.py'} (they have: n, dtype, seed)")
    bad.write_text('CASES_WHERE = {"dtype": "bfloat16"}\n')
    with pytest.raises(AssignmentError) as e:
        a.cases_of(a.version("v04"))
    assert str(e.value) == (f"{bad}: CASES_WHERE {{'dtype': 'bfloat16'}} matches no case of {a.path / 'assignment.py'} "
                            "(cases: test_64, test_64_fp16, benchmark, benchmark_fp16)")
    # where only the recorded cases are known (the assignment does not import here), matching none of them is no error
    assert a.cases_of(a.version("v04"), {"benchmark": {"n": 1024, "dtype": "float32"}}, complete=False) == []


def test_benchmark_cases_and_the_headline_case(tmp_path):
    a = _toy(tmp_path)
    assert a.benchmark_cases == ["benchmark", "benchmark_fp16"] and a.benchmark_case == "benchmark"
    assert [a.headline_case(a.version(v)) for v in ("v01", "v02", "v03")] == \
        ["benchmark", "benchmark_fp16", "benchmark"]
    assert headline_case(tmp_path / "kernels", "toy", "v02_tensor_cores") == "benchmark_fp16"
    assert headline_case(tmp_path / "kernels", "toy", "v09_deleted") == "benchmark"  # only records left: the first
    # one case to compare two versions on, the same either way round; none where they share none
    heads = {v: a.headline_cases(a.version(v)) for v in ("v01", "v02", "v03")}
    assert comparison_case(heads["v02"], heads["v01"]) == "benchmark_fp16"
    assert comparison_case(heads["v01"], heads["v02"]) == "benchmark_fp16"
    assert comparison_case(heads["v03"], heads["v01"]) == "benchmark"
    assert comparison_case(heads["v03"], heads["v02"]) is None


@pytest.mark.parametrize("lines,expected", [
    ('BENCHMARK_CASE = "benchmark"\n', ["benchmark"]),
    ('BENCHMARK_CASES = ["big", "big_fp16"]\n', ["big", "big_fp16"]),
    ('BENCHMARK_CASE = "big"\nBENCHMARK_CASES = ["big", "big_fp16"]\n', ["big", "big_fp16"]),
    ('BENCHMARK_CASE = "big_fp16"\nBENCHMARK_CASES = ["big", "big_fp16"]\n',
     "BENCHMARK_CASE 'big_fp16' must be the first of BENCHMARK_CASES (big, big_fp16)"),
    ('BENCHMARK_CASES = ["big", "big"]\n', "BENCHMARK_CASES must be a literal list of distinct case names"),
    ('BENCHMARK_CASES = []\n', "BENCHMARK_CASES must be a literal list of distinct case names"),
], ids=["single", "list", "both", "not-first", "twice", "empty"])
def test_benchmark_cases_literal(tmp_path, lines, expected):
    (tmp_path / "assignment.py").write_text(lines)
    if isinstance(expected, list):
        assert benchmark_cases_of(tmp_path) == expected
        return
    with pytest.raises(AssignmentError) as e:
        benchmark_cases_of(tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'assignment.py'}: {expected}")


# --------------------------------------------------------------------------- the harness


def test_the_harness_skips_what_a_version_does_not_run_and_refuses_it_when_named(tmp_path):
    a = _toy(tmp_path)
    vs = a.versions()
    plan = a.plan(vs, list(a.cases()))
    assert [(c, [v.short for v in here]) for c, here in plan] == [
        ("test_64", ["v01", "v03"]), ("test_64_fp16", ["v01", "v02"]), ("benchmark", ["v01", "v03"]),
        ("benchmark_fp16", ["v01", "v02"])]
    assert a.plan([a.version("v02")], ["benchmark"]) == []  # the default: left out, no error
    with pytest.raises(AssignmentError) as e:
        a.plan([a.version("v02"), a.version("v01")], ["benchmark"], named=True)
    assert str(e.value) == (f"v02_tensor_cores does not run case 'benchmark': CASES_WHERE {{'dtype': 'float16'}} in "
                            f"{a.path / 'v02_tensor_cores.py'} (it runs: test_64_fp16, benchmark_fp16)")


def test_report_run_refuses_a_case_named_for_a_version_that_does_not_run_it(tmp_path):
    _toy(tmp_path)
    r = report("run", "toy", "--case", "benchmark", "-v", "v02", root=tmp_path)
    assert r.exit_code == 2, r.output
    assert "v02_tensor_cores does not run case 'benchmark': CASES_WHERE {'dtype': 'float16'}" in _one_line(r)
    # the same case for every version, or every case for v02: no complaint (the run then needs a GPU)
    for args in (["--case", "benchmark"], ["-v", "v02"]):
        out = report("run", "toy", *args, root=tmp_path)
        assert "does not run case" not in out.output, out.output


def _copy(toy_project: Path, tmp_path: Path) -> Path:
    import shutil

    for name in ("kernels", "logs"):
        shutil.copytree(toy_project / name, tmp_path / name)
    return tmp_path


def test_a_bad_cases_where_stops_the_build_naming_the_file(toy_project, tmp_path):
    root = _copy(toy_project, tmp_path)
    (root / "kernels" / "toy" / "v03_fp32_only.py").write_text('CASES_WHERE = {"precision": "fp32"}\n'
                                                               'def custom_kernel(data):\n    return data\n')
    r = report("build", "toy", "--out", tmp_path / "out", "--html-only", root=root)
    assert r.exit_code != 0
    assert "v03_fp32_only.py: CASES_WHERE names 'precision', not a parameter" in _one_line(r)


# --------------------------------------------------------------------------- the report and the CLI over records


@pytest.fixture(scope="module")
def built(toy_project: Path) -> str:
    out = toy_project / "out"
    r = report("build", "toy", "--out", out, "--html-only", root=toy_project)
    assert r.exit_code == 0, r.output
    return (out / "worklog.html").read_text()


def _text(html: str) -> str:
    """The words of some HTML: inline tags dropped, others a space."""
    inline = re.sub(r"</?(?:span|a|strong|em|code)\b[^>]*>", "", html)
    return " ".join(re.sub(r"<[^>]+>", " ", inline).replace("&#39;", "'").split())


def _row(html: str, version: str) -> str:
    """The steps table's row of a version, as text."""
    table = html[html.index('class="steps-table"'):]
    row = re.search(rf'<tr[^>]*>\s*<td><a href="#{version}">.*?</tr>', table, re.DOTALL)
    assert row is not None, version
    return _text(row.group(0))


def test_the_report_labels_the_headline_case_and_compares_on_the_shared_case(built):
    # v02's figure is its fp16 time, labelled; its ratio against v01 is taken on fp16, where both ran
    assert _row(built, "v01_naive").startswith("v01_naive 4.000 ms first")
    v02 = _row(built, "v02_tensor_cores")
    assert v02.startswith("v02_tensor_cores 500.0 µs on benchmark_fp16 6.00× faster on benchmark_fp16"), v02
    # v03 and v02 share no benchmark case: no ratio between two cases
    v03 = _row(built, "v03_fp32_only")
    assert v03.startswith("v03_fp32_only 2.000 ms – (no case in common with v02)"), v03
    assert "on benchmark_fp16" not in v03
    text = _text(built)
    # the worklog's bindings take the same figure and the same comparison
    assert "It takes 0.5000 ms on its headline case, benchmark_fp16, 6.00× v01's time there" in text
    # page 1: the best is ranked on the benchmark case; the fp16-only version on its own case, never against fp32 times
    cover = text[:text.index("The steps at a glance")]
    assert "v03_fp32_only: 2.000 ms" in cover, cover
    assert re.search(r"On benchmark_fp16, the first benchmark case of the versions whose CASES_WHERE leaves benchmark "
                     r"out \(v02_tensor_cores\), the fastest of them is v02_tensor_cores: 500\.0 µs, [\d.,]+ TFLOP/s; "
                     r"against the first version, v01_naive: 6\.00× faster on benchmark_fp16", cover), cover
    # the appendix says which cases it runs
    assert "Runs only the cases where dtype = float16 (CASES_WHERE): its figure is taken on benchmark_fp16" in text


def test_list_show_and_diff_take_each_version_on_its_headline_case(toy_project):
    r = report("list", "toy", root=toy_project)
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.output.splitlines() if line.startswith("v0")}
    assert re.search(r"v02_tensor_cores\s+benchmark_fp16\s+ok\s+500\.0 µs\s+6\.00×", lines["v02_tensor_cores"]), \
        r.output
    assert re.search(r"v03_fp32_only\s+ok\s+2\.000 ms\s+2\.00×", lines["v03_fp32_only"]), r.output
    assert "case benchmark" in r.output and "CASES_WHERE" in r.output

    r = report("show", "toy", "v02", root=toy_project)
    assert r.exit_code == 0, r.output
    assert "toy v02_tensor_cores · benchmark_fp16" in r.output

    r = report("diff", "toy", "v01", "v02", root=toy_project)
    assert r.exit_code == 0, r.output
    assert "· benchmark_fp16" in r.output.splitlines()[0]
    r = report("diff", "toy", "v02", "v03", root=toy_project)
    assert r.exit_code == 2
    assert "v02_tensor_cores and v03_fp32_only run no benchmark case in common" in _one_line(r)


def test_a_binding_between_versions_with_no_common_case_names_why(toy_project, tmp_path):
    _copy(toy_project, tmp_path)
    worklog = tmp_path / "kernels" / "toy" / "worklog.md"
    worklog.write_text(worklog.read_text().replace("It takes {{ v03.ms }} ms.", "{{ v03.speedup_over('v02') }}"))
    r = report("build", "toy", "--out", tmp_path / "out", "--html-only", root=tmp_path)
    assert r.exit_code != 0
    assert "speedup_over('v02'): v03 and v02 run no benchmark case in common (CASES_WHERE)" in _one_line(r)
