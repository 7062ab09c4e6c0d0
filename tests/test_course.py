"""A course's problem folder as an assignment (reporter.course, `report new --from-task`), and exports
run the way a course harness runs them: a 'spawn' worker that imports ``submission``.

The course used here is tests/fixtures/course/problems: a problem (scaled_sum) and a harness
(eval.py) written for these tests in the CS149 / GPU MODE format, runnable on the CPU. The real
course's harness runs our exports on the GPU (`report crosscheck`, and tests/test_gpu_versions.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402
from reporter.assignments import AssignmentError, get_assignment  # noqa: E402
from reporter.cli import app  # noqa: E402
from reporter.course import CourseTask, case_names, parse_test_file, problem_title, tensor_bytes  # noqa: E402
from reporter.harness.check import check_output  # noqa: E402
from reporter.harness.crosscheck import match_cases, parse_output, run_course_harness  # noqa: E402

runner = CliRunner()
COURSE = ROOT / "tests" / "fixtures" / "course"
PROBLEM = COURSE / "problems" / "scaled_sum"


# --------------------------------------------------------------------------- the test file


def test_test_file_lines_become_cases(tmp_path):
    f = tmp_path / "test.txt"
    f.write_text("n: 4; seed: 11\n\nn: -8; mode: fast ; seed: +3\n")
    assert parse_test_file(f) == [{"n": 4, "seed": 11}, {"n": -8, "mode": "fast", "seed": 3}]
    assert case_names(3) == ["test_0", "test_1", "benchmark"]
    assert case_names(3, 0) == ["benchmark", "test_1", "test_2"]
    with pytest.raises(AssignmentError, match="outside"):
        case_names(2, 5)


@pytest.mark.parametrize("text,message", [
    ("n: 4; seed 11\n", "test.txt:1: 'seed 11' is not 'key: value'"),
    ("n: 4\nn: 1.5\n", "test.txt:2: 'n: 1.5'"),
    ("n: 4; n: 5\n", "key 'n' appears twice"),
    ("\n\n", "no test cases"),
])
def test_bad_test_files_name_file_and_line(tmp_path, text, message):
    f = tmp_path / "test.txt"
    f.write_text(text)
    with pytest.raises(AssignmentError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_test_file(f)


# --------------------------------------------------------------------------- the task


def test_course_task_is_the_folder_s_own_functions():
    task = CourseTask(PROBLEM)
    assert task.title == "Scaled row sums" == problem_title(PROBLEM)
    assert list(task.cases) == ["test_0", "test_1", "benchmark"]
    assert task.cases["benchmark"] == {"rows": 1000, "cols": 257, "seed": 13}
    data = task.generate_input(**task.cases["test_1"])
    x, scale = data
    assert tuple(x.shape) == (64, 100) and scale == 0.5
    ref = task.ref_kernel(data)
    assert task.check_implementation(data, ref) == (True, "")
    ok, message = task.check_implementation(data, ref + 1)
    assert not ok and "64 mismatched" in message
    w = task.work_model(**task.cases["benchmark"])
    assert w.bytes == 1000 * 257 * 4 + 1000 * 4
    assert tensor_bytes(data) == 64 * 100 * 4  # the float scale is no tensor
    assert w.flops is None and w.ceiling == "copy" and "no flop count" in w.description  # unknown, not zero
    assert w.bytes_read == 1000 * 257 * 4 and w.intensity is None
    # the flops an assignment counts, with the bytes as measured
    c = task.counted_work(task.cases["benchmark"], flops=2.0 * 1000 * 257, ceiling="copy", what="two flops an element")
    assert (c.flops, c.bytes, c.bytes_read, c.ceiling) == (2.0 * 1000 * 257, w.bytes, w.bytes_read, "copy")
    assert c.description == ("two flops an element; the input's tensors (1,028,000 bytes) read once and the output "
                             "(4,000 bytes) written once")
    assert list(task.peers()) == ["course_reference"]


def test_unknown_flops_show_as_unknown_never_as_zero():
    """An imported problem's work model knows its bytes, not its flops: the derived figures keep the bandwidth
    and leave TFLOP/s, the share of a roof and the floor unknown, and the run table and `report show` print
    them as "—" (never "0.0 TFLOP/s" or "0.0 % of roof")."""
    from datetime import UTC, datetime

    from rich.console import Console

    from reporter.records import DeviceCeilings, DeviceInfo, WorkModel, derive
    from reporter.render.tables import derived_table

    work = CourseTask(PROBLEM).work_model(**CourseTask(PROBLEM).cases["benchmark"])
    info = DeviceInfo(name="NVIDIA H100 80GB HBM3", slug="h100", compute_capability="9.0", sm_count=132,
                      l2_bytes=50 << 20, memory_bytes=80 << 30)
    ceilings = DeviceCeilings(created_utc=datetime(2026, 11, 27, tzinfo=UTC), device=info, copy_gbps=2977.0,
                              copy_bytes=2 << 30, matmul_tflops={"fp32": 51.0}, matmul_n=8192)
    d = derive(work, 0.01, ceilings)
    assert d.gbps == pytest.approx(work.bytes / 1e-5 / 1e9)
    assert d.tflops is None and d.arithmetic_intensity is None
    assert d.fraction_of_ceiling is None and d.floor_ms is None  # which roof binds is not known either
    console = Console(width=100, record=True)
    console.print(derived_table(type("R", (), {"derived": d, "work": work})()))  # the table reads .derived
    lines = console.export_text().splitlines()
    for name in ("compute", "arithmetic intensity"):
        line = next(x for x in lines if x.strip().startswith(name))
        assert "—" in line and "0.0" not in line, line
    assert not any("fraction of ceiling" in x or "roofline floor" in x for x in lines)
    # flops unknown cannot stand under a compute roof
    with pytest.raises(ValueError, match="needs the flops"):
        WorkModel(flops=None, bytes=1.0, ceiling="matmul_fp32")


def test_two_problems_in_one_process_keep_their_own_task_modules(tmp_path):
    """Both folders import a module named 'task'; neither sees the other's, and nothing stays behind."""
    other = tmp_path / "problems" / "other"
    (other / "test_cases").mkdir(parents=True)
    (other / "task.py").write_text("FACTOR = 3\n")
    (other / "reference.py").write_text(
        "from task import FACTOR\n"
        "def generate_input(n, seed):\n    return n\n"
        "def ref_kernel(data):\n    return data * FACTOR\n"
        "def check_implementation(data, output):\n    return output == data * FACTOR, ''\n")
    (other / "test_cases" / "test.txt").write_text("n: 2; seed: 1\n")
    before = {name: sys.modules.get(name) for name in ("task", "reference", "utils")}
    a, b = CourseTask(PROBLEM), CourseTask(other)
    assert b.ref_kernel(b.generate_input(n=2, seed=1)) == 6
    assert a.ref_kernel(a.generate_input(rows=2, cols=2, seed=1)).shape == (2,)
    assert {name: sys.modules.get(name) for name in ("task", "reference", "utils")} == before


def test_a_missing_folder_says_where_and_how_to_get_it(tmp_path):
    task = CourseTask(tmp_path / "nowhere" / "swiglu")
    with pytest.raises(AssignmentError, match=r"nowhere/swiglu is not on this machine.*check out the course.s repository"):
        _ = task.cases


# --------------------------------------------------------------------------- report new --from-task


def new_course_assignment(project: Path, *extra: str) -> Path:
    result = runner.invoke(app, ["new", "scaled", "v01_reference", "--from-task", str(PROBLEM), "--root",
                                 str(project), *extra])
    assert result.exit_code == 0, result.output
    return project / "kernels" / "scaled"


def test_new_from_task_makes_an_assignment_that_loads_the_folder(tmp_path):
    folder = new_course_assignment(tmp_path)
    text = (folder / "assignment.py").read_text()
    assert "TASK_DIR = " + repr(os.path.relpath(PROBLEM, folder)) in text  # relative: the project can move
    assert "def generate_input" not in text and "torch.rand" not in text  # nothing of the course's copied
    a = get_assignment(tmp_path / "kernels", "scaled")
    assert a.title == "Scaled row sums" and a.benchmark_case == "benchmark"
    assert list(a.cases()) == ["test_0", "test_1", "benchmark"]
    spec = a.spec
    assert spec.TOLERANCE is None and callable(spec.check_implementation)
    data = spec.generate_input(**a.case("test_0"))
    assert check_output(spec, data, spec.ref_kernel(data), spec.ref_kernel(data)).passed
    assert (folder / "v01_reference.py").is_file() and "## v01_reference" in (folder / "worklog.md").read_text()


def test_new_from_task_benchmark_line_and_refusals(tmp_path):
    folder = new_course_assignment(tmp_path, "--benchmark-line", "0")
    assert list(get_assignment(tmp_path / "kernels", "scaled").cases()) == ["benchmark", "test_1", "test_2"]
    again = runner.invoke(app, ["new", "scaled", "v02_x", "--from-task", str(PROBLEM), "--root", str(tmp_path)])
    assert again.exit_code == 2 and "exists already" in again.output
    bad = runner.invoke(app, ["new", "other", "v01_x", "--from-task", str(tmp_path), "--root", str(tmp_path)])
    assert bad.exit_code == 2 and "no reference.py there" in bad.output
    stray = runner.invoke(app, ["new", "other", "v01_x", "--benchmark-line", "1", "--root", str(tmp_path)])
    assert stray.exit_code == 2 and "--benchmark-line goes with --from-task" in stray.output
    assert folder.is_dir()


def test_course_check_decides_and_error_figures_stay(tmp_path):
    new_course_assignment(tmp_path)
    spec = get_assignment(tmp_path / "kernels", "scaled").spec
    data = spec.generate_input(rows=8, cols=5, seed=2)
    ref = spec.ref_kernel(data)
    good = check_output(spec, data, ref + 1e-7, ref, seed=2)
    assert good.passed and good.by == "check_implementation" and good.max_abs_error is not None
    bad = check_output(spec, data, ref * 2, ref, seed=2)
    assert not bad.passed and bad.message.startswith("check_implementation: 8 mismatched") and bad.mismatches == 8
    wrong_shape = check_output(spec, data, ref[:3], ref)
    assert not wrong_shape.passed and not wrong_shape.shape_ok


# --------------------------------------------------------------------------- exports in a course-format harness


VERSION = '''"""Row sums in float64, then scaled: the plainest correct version, written for the test."""


def custom_kernel(data):
    x, scale = data
    return (x.double().sum(dim=1) * scale).float()
'''


def _export(project: Path, assignment: str, version: str, out: Path | None = None) -> str:
    out = out or project / "exported" / assignment / version
    result = runner.invoke(app, ["export", assignment, version, "-o", str(out), "--root", str(project)])
    assert result.exit_code == 0, result.output
    return (out / "submission.py").read_text()


def test_an_export_passes_the_course_format_harness_and_a_wrong_one_fails(tmp_path):
    folder = new_course_assignment(tmp_path)
    (folder / "v02_float64_sum.py").write_text(VERSION)
    (folder / "v03_wrong.py").write_text(VERSION.replace("* scale", "* scale * 1.01"))
    good = _export(tmp_path, "scaled", "v02")
    test = run_course_harness(PROBLEM, good, "test", submission="export of v02")
    assert test.returncode == 0 and test.verdict == "pass", test.output + test.stderr_tail
    assert [c.status for c in test.cases] == ["pass", "pass", "pass"]
    assert test.cases[2].spec == "rows: 1000; cols: 257; seed: 13"
    bench = run_course_harness(PROBLEM, good, "benchmark", submission="export of v02")
    assert bench.verdict == "pass" and all(c.runs == 5 and c.mean_ms > 0 for c in bench.cases)
    wrong = run_course_harness(PROBLEM, _export(tmp_path, "scaled", "v03"), "test", submission="export of v03")
    assert wrong.verdict == "fail" and wrong.returncode == 112
    assert wrong.cases[0].status == "fail" and "mismatched" in (wrong.cases[0].error or "")


def test_the_scaffolded_version_of_a_course_problem_is_handed_in_as_it_is(tmp_path):
    """The whole loop on a problem this project never saw: `report new --from-task` writes a first version that
    imports the course's own modules (never the assignment, which imports this project), our harness imports it
    with the folder's modules, and its export carries nothing of the project and passes the course's harness."""
    folder = new_course_assignment(tmp_path)
    source = (folder / "v01_reference.py").read_text()
    assert "from reference import ref_kernel" in source and "from task import input_t, output_t" in source
    assert "assignment" not in source.split('"""')[2]  # the code after the docstring
    a = get_assignment(tmp_path / "kernels", "scaled")
    assert a.task_folder == PROBLEM.resolve() and {"reference", "task", "utils"} <= set(a.supplied_names())
    before = {name: sys.modules.get(name) for name in ("task", "reference", "utils")}
    module = a.load(a.version("v01"))
    data = a.spec.generate_input(**a.case("test_1"))
    assert torch.equal(module.custom_kernel(data), a.spec.ref_kernel(data))
    assert {name: sys.modules.get(name) for name in ("task", "reference", "utils")} == before  # nothing left behind
    # the one instance of the course's modules, as in the harness's process: the version's is the task's
    assert a.load(a.version("v01")).ref_kernel is a.spec.TASK.reference.ref_kernel

    text = _export(tmp_path, "scaled", "v01")
    assert "Course:      imports reference, task from the problem's folder (scaled_sum)" in text
    assert "Needs:       nothing beyond Python" in text
    assert "_FILES['reporter/" not in text and "from assignment" not in text
    test = run_course_harness(PROBLEM, text, "test", submission="export of v01")  # benchmark mode: the test above
    assert test.verdict == "pass" and [c.status for c in test.cases] == ["pass"] * 3, test.output + test.stderr_tail


def test_an_earlier_export_of_a_course_version_loads_with_the_course_s_modules(tmp_path):
    """`report reverify` imports a version's earlier export beside the current one: for a course problem, with
    the course's modules, as the course's harness would."""
    from reporter.harness.reverify import load_submission

    new_course_assignment(tmp_path)
    _export(tmp_path, "scaled", "v01", out=tmp_path / "before" / "v01_reference")
    v = get_assignment(tmp_path / "kernels", "scaled").version("v01")
    module, sub = load_submission(tmp_path / "before" / "v01_reference" / "submission.py", v, PROBLEM)
    data = CourseTask(PROBLEM).generate_input(rows=3, cols=4, seed=1)
    assert torch.equal(module.custom_kernel(data), CourseTask(PROBLEM).ref_kernel(data))
    assert sub.files[0].rel == "v01_reference.py"


HELPER_VERSION = '''"""Row sums through the course's shared check helper and an earlier version of ours."""

import utils
from task import input_t, output_t
from v02_float64_sum import custom_kernel as earlier


def custom_kernel(data: input_t) -> output_t:
    out = earlier(data)
    ok, message = utils.close_enough(out, out.clone(), 0.0, 0.0)
    assert ok, message
    return out
'''


def test_a_version_using_the_course_helpers_and_a_sibling_exports_them_apart(tmp_path):
    """What the course supplies (task, utils) stays out of the file; a sibling of ours is embedded."""
    folder = new_course_assignment(tmp_path)
    (folder / "v02_float64_sum.py").write_text(VERSION)
    (folder / "v03_with_helpers.py").write_text(HELPER_VERSION)
    a = get_assignment(tmp_path / "kernels", "scaled")
    data = a.spec.generate_input(**a.case("test_0"))
    assert torch.equal(a.load(a.version("v03")).custom_kernel(data), a.spec.ref_kernel(data))
    text = _export(tmp_path, "scaled", "v03")
    assert "_FILES['v02_float64_sum.py']" in text and "_FILES['utils.py']" not in text
    assert "Course:      imports task, utils from the problem's folder" in text
    res = run_course_harness(PROBLEM, text, "test", submission="export of v03")
    assert res.verdict == "pass", res.output + res.stderr_tail


def test_a_version_importing_the_assignment_is_refused_with_what_to_import_instead(tmp_path):
    folder = new_course_assignment(tmp_path)
    (folder / "v02_via_assignment.py").write_text("from assignment import ref_kernel\n\n\n"
                                                  "def custom_kernel(data):\n    return ref_kernel(data)\n")
    result = runner.invoke(app, ["export", "scaled", "v02", "-o", str(tmp_path / "s.py"), "--root", str(tmp_path)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "assignment.py: imports reporter.course" in text
    assert "from reference import ref_kernel" in text and "never the assignment" in text
    assert not (tmp_path / "s.py").exists()


def test_versions_of_two_problems_in_one_process_each_get_their_own_course_modules(tmp_path):
    """Both problems have a task.py: a version of each binds its own folder's, and the names are free after."""
    new_course_assignment(tmp_path)
    result = runner.invoke(app, ["new", "mm", "v01_reference", "--from-task",
                                 str(COURSE / "problems" / "square_matmul_fp32"), "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    scaled, mm = (get_assignment(tmp_path / "kernels", n) for n in ("scaled", "mm"))
    before = {name: sys.modules.get(name) for name in ("task", "reference", "utils")}
    one, two = scaled.load(scaled.version("v01")), mm.load(mm.version("v01"))
    assert one.input_t is not two.input_t
    assert Path(one.ref_kernel.__code__.co_filename).parent.name == "scaled_sum"
    assert Path(two.ref_kernel.__code__.co_filename).parent.name == "square_matmul_fp32"
    assert {name: sys.modules.get(name) for name in ("task", "reference", "utils")} == before


@pytest.mark.parametrize("assignment,version", [("flashattn", "v16"), ("histogram", "v07")])
def test_best_exports_import_in_a_spawned_worker_as_the_harness_does(assignment, version, tmp_path):
    """Without a GPU the kernels cannot run; what can be checked is that the harness's worker
    process, with nothing of this project on its path, imports submission and finds custom_kernel."""
    text = _export(ROOT, assignment, version, out=tmp_path / "hand-in")
    res = run_course_harness(PROBLEM, text, "import", submission=f"export of {version}")
    assert res.returncode == 0 and "import: ok" in res.output, res.output + res.stderr_tail


# --------------------------------------------------------------------------- reading the real harness's output


REAL_OUTPUT = """benchmark-count: 3
benchmark.0.spec: batch_size: 1; num_heads: 64; seq_len: 1024; head_dim: 128; seed: 1118
benchmark.0: runs=62, mean=0.085 ms, std=0.001 ms, err=0.000 ms, best=0.084 ms, worst=0.087 ms
benchmark.1.spec: batch_size: 2; num_heads: 64; seq_len: 4096; head_dim: 128; seed: 1118
benchmark.1.status: fail
benchmark.1.error: mismatch found! custom implementation doesn't match reference: Number of mismatched elements: 3
benchmark.2.spec: batch_size: 4; num_heads: 64; seq_len: 8192; head_dim: 128; seed: 1118
benchmark.2: runs=100, mean=13,885.000 ms, std=0.760 ms, err=0.076 ms, best=12.210 ms, worst=16.119 ms
check: fail
"""


def test_harness_output_is_parsed_case_by_case():
    verdict, cases = parse_output(REAL_OUTPUT)
    assert verdict == "fail" and [c.index for c in cases] == [0, 1, 2]
    assert (cases[0].runs, cases[0].mean_ms, cases[0].best_ms) == (62, 0.085, 0.084)
    assert cases[1].status == "fail" and cases[1].error.startswith("mismatch found!") and cases[1].mean_ms is None
    assert cases[2].mean_ms == 13885.0 and cases[2].spec.endswith("seed: 1118")


def test_course_lines_match_our_cases_by_their_parameters():
    fa = get_assignment(ROOT / "kernels", "flashattn")
    lines = [dict(batch_size=b, num_heads=64, seq_len=s, head_dim=128, seed=1118)
             for b, s in ((1, 1024), (2, 4096), (4, 8192))]
    assert match_cases(fa, lines) == {0: "test_small", 1: "test_medium", 2: "benchmark"}
    hist = get_assignment(ROOT / "kernels", "histogram")
    line = dict(length=1048576, num_channels=512, num_bins=256, seed=1001)
    assert match_cases(hist, [line, {**line, "seed": 7}]) == {0: "benchmark"}  # not 'contention', not seed 7


# --------------------------------------------------------------------------- matmul's exports in the harness, on the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("version,problem", [("v15", "square_matmul_fp16"), ("v16", "square_matmul_fp32"),
                                             ("v17", "square_matmul_fp32")])
def test_matmul_exports_pass_a_course_format_harness_on_gpu(version, problem, tmp_path):
    """The hand-in of each dtype, exported, in a spawned harness worker with nothing of this project on
    its path: the course format's test mode (odd, edge-tile and 4096 sizes) and benchmark mode pass."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import elftools

    text = _export(ROOT, "matmul", version, out=tmp_path / "hand-in")
    # what the export needs besides torch, cupy and numpy (installed beside the harness on a course machine)
    extra = [str(Path(elftools.__file__).resolve().parent.parent)]
    folder = COURSE / "problems" / problem
    test = run_course_harness(folder, text, "test", submission=f"export of {version}", extra_path=extra)
    assert test.verdict == "pass" and [c.status for c in test.cases] == ["pass"] * 3, test.output + test.stderr_tail
    bench = run_course_harness(folder, text, "benchmark", submission=f"export of {version}", extra_path=extra)
    assert bench.verdict == "pass" and all(c.runs == 5 for c in bench.cases), bench.output + bench.stderr_tail
