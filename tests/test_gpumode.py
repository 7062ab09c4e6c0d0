"""A problem folder in GPU MODE's layout (task.yml), end to end on the CPU: import, run its version, export,
the harness's test and benchmark modes, and the folder's own solutions through its check.

The folder is tests/fixtures/gpumode/problems/cpu/row_max_py, written for these tests in that layout (its
harness writes to POPCORN_FD, in nanoseconds; its check returns an error text, empty when an output
passes). The real repository's harness runs our exports on the GPU (`report crosscheck`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402
from reporter.assignments import AssignmentError, get_assignment  # noqa: E402
from reporter.cli import app  # noqa: E402
from reporter.course import CourseTask, check_result, read_task  # noqa: E402
from reporter.course import TestFileError as CaseFileError  # noqa: E402  (not a test class)
from reporter.harness.crosscheck import harness_hashes, run_course_harness  # noqa: E402

runner = CliRunner()
PROBLEM = ROOT / "tests" / "fixtures" / "gpumode" / "problems" / "cpu" / "row_max_py"


def new_gpumode_assignment(project: Path, problem: Path = PROBLEM) -> Path:
    result = runner.invoke(app, ["new", "rowmax", "v01_reference", "--from-task", str(problem), "--root",
                                 str(project)])
    assert result.exit_code == 0, result.output
    return project / "kernels" / "rowmax"


def test_names_task_yml_lists_are_the_ones_a_version_imports_wherever_their_files_are(tmp_path):
    """GPU MODE's task.yml may take a file from anywhere in the repository (its linalg problems take utils.py
    from another set's folder): the version imports it under the listed name, and only listed names are
    supplied (a problem that lists no task.py supplies no task)."""
    from reporter.course_imports import course_imports, supplied_names

    shared = tmp_path / "problems" / "other_set"
    shared.mkdir(parents=True)
    (shared / "helpers.py").write_text("WHERE = 'other set'\n")
    problem = tmp_path / "problems" / "this_set" / "p"
    problem.mkdir(parents=True)
    (problem / "reference.py").write_text("import utils\n")
    (problem / "task.yml").write_text(
        'files:\n  - {"name": "submission.py", "source": "@SUBMISSION@"}\n'
        '  - {"name": "utils.py", "source": "../../other_set/helpers.py"}\n'
        '  - {"name": "reference.py", "source": "reference.py"}\n'
        "tests: [{n: 1}]\nbenchmarks: [{n: 2}]\n")
    assert supplied_names(problem) == ("utils", "reference")
    with course_imports(problem):
        import utils  # noqa: PLC0415

        assert utils.WHERE == "other set"
    assert "utils" not in sys.modules or getattr(sys.modules["utils"], "WHERE", None) != "other set"


def test_task_yml_gives_the_tests_the_benchmarks_and_the_files():
    spec = read_task(PROBLEM)
    assert spec.layout == "gpumode" and spec.main == "eval.py" and spec.source == PROBLEM / "task.yml"
    assert spec.tests == [{"rows": 3, "cols": 5, "seed": 11}, {"rows": 64, "cols": 129, "seed": 12}]
    assert [c["rows"] for c in spec.benchmarks] == [256, 1000]
    assert ("utils.py", "../utils.py") in spec.files and ("submission.py", "@SUBMISSION@") in spec.files
    task = CourseTask(PROBLEM)
    # the tests, then the benchmarks; the last benchmark (the leaderboard's) is the benchmark
    assert list(task.cases) == ["test_0", "test_1", "benchmark_0", "benchmark"]
    assert task.cases["benchmark"] == {"rows": 1000, "cols": 4096, "seed": 22}
    assert task.title == "Row maxima of a float32 matrix"  # no README: the description's first line
    assert set(harness_hashes(PROBLEM)) == {"row_max_py/task.yml", "row_max_py/task.py", "utils.py",
                                            "row_max_py/reference.py", "eval.py"}


@pytest.mark.parametrize("text,message", [
    ("tests:\n  - {rows: 3, ok: true}\nbenchmarks: [{rows: 4}]\n", "tests[0]: 'ok: True' is not 'key: value'"),
    ("tests: [{rows: 3}]\nbenchmarks: 5\n", "'benchmarks' must be a list"),
    ("files:\n  - {name: task.py, source: task.py}\ntests: [{rows: 3}]\nbenchmarks: [{rows: 4}]\n",
     "no file's source is @SUBMISSION@"),
    ("tests: [{rows: 3}]\nbenchmarks: []\n", "no benchmarks"),
    ("tests: [\n", "cannot read it"),
])
def test_a_task_yml_the_runner_could_not_use_is_refused_naming_the_file(tmp_path, text, message):
    (tmp_path / "reference.py").write_text("")
    (tmp_path / "task.yml").write_text(text)
    with pytest.raises(CaseFileError) as e:
        _ = CourseTask(tmp_path).cases
    assert str(tmp_path / "task.yml") in str(e.value) and message in str(e.value), str(e.value)


def test_a_folder_with_no_cases_names_both_files(tmp_path):
    (tmp_path / "reference.py").write_text("")
    with pytest.raises(CaseFileError, match=r"neither test_cases/test.txt \(CS149\) nor task.yml \(GPU MODE\)"):
        _ = CourseTask(tmp_path).cases


def test_a_check_that_returns_an_error_text_passes_on_the_empty_text():
    assert check_result("") == (True, "") and check_result("mismatch found! 3") == (False, "mismatch found! 3")
    assert check_result((False, "bad")) == (False, "bad") and check_result(True) == (True, "")
    assert check_result(None) == (True, "") and check_result([]) == (True, "")  # "if error: fail"
    assert check_result(["3 mismatched", "max 0.5"]) == (False, "3 mismatched max 0.5")
    data = CourseTask(PROBLEM).generate_input(rows=4, cols=6, seed=1)
    task = CourseTask(PROBLEM)
    assert task.check_implementation(data, task.ref_kernel(data)) == (True, "")
    ok, message = task.check_implementation(data, data[:, 0])
    assert not ok and message.startswith("mismatch found!")


def test_the_loop_on_a_gpumode_folder_import_run_export_and_its_harness(tmp_path):
    """Scaffold, load the version as the harness would, export it with nothing of the project, and run the
    export through the folder's own harness in test and benchmark mode (its report read from POPCORN_FD)."""
    folder = new_gpumode_assignment(tmp_path)
    text = (folder / "assignment.py").read_text()
    assert "GPU MODE layout" in text and "task.yml's tests (test_0, test_1, …) and benchmarks" in text
    a = get_assignment(tmp_path / "kernels", "rowmax")
    assert a.benchmark_case == "benchmark" and list(a.cases()) == ["test_0", "test_1", "benchmark_0", "benchmark"]
    assert set(a.supplied_names()) == {"reference", "task", "utils", "eval"}  # task.yml's files, less the submission
    data = a.spec.generate_input(**a.case("test_1"))
    assert torch.equal(a.load(a.version("v01")).custom_kernel(data), a.spec.ref_kernel(data))

    out = tmp_path / "hand-in"
    result = runner.invoke(app, ["export", "rowmax", "v01", "-o", str(out), "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    submission = (out / "submission.py").read_text()
    assert "Course:      imports reference, task from the problem's folder (row_max_py)" in submission
    test = run_course_harness(PROBLEM, submission, "test", submission="export of v01")
    assert test.returncode == 0 and test.verdict == "pass", test.output + test.stderr_tail
    assert [c.status for c in test.cases] == ["pass", "pass"] and test.cases[1].spec == "rows: 64; cols: 129; seed: 12"
    bench = run_course_harness(PROBLEM, submission, "benchmark", submission="export of v01")
    assert bench.returncode == 0 and bench.verdict == "pass", bench.output + bench.stderr_tail
    assert [c.runs for c in bench.cases] == [5, 5]
    # nanoseconds read as milliseconds: a CPU row max of 1000 x 4096 takes about a millisecond, not a million
    assert all(0 < c.mean_ms < 1000 and c.best_ms <= c.mean_ms <= c.worst_ms for c in bench.cases), bench.cases

    bad = submission.replace("return ref_kernel(data)", "return data[:, 0]")
    assert bad != submission
    failed = run_course_harness(PROBLEM, bad, "test", submission="a wrong one")
    assert failed.verdict == "fail" and failed.returncode == 112 and "mismatch found!" in (failed.cases[0].error or "")


def test_the_folder_s_solutions_are_judged_by_its_check(tmp_path):
    """`report solutions`: the correct solution passes every test case, each wrong one fails one; a wrong
    solution that the check passes makes the command fail, naming it."""
    new_gpumode_assignment(tmp_path)
    result = runner.invoke(app, ["solutions", "rowmax", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "correct/ref.py pass all pass pass yes" in flat and "wrong/first_column.py fail one fail fail yes" in flat
    assert "wrong/empty.py" in flat and "3 solutions, 2 cases" in flat

    problem = tmp_path / "problems" / "cpu" / "row_max_py"
    shutil.copytree(PROBLEM.parent, problem.parent)
    (problem / "solutions" / "wrong" / "same_as_max.py").write_text(
        "def custom_kernel(data):\n    return data.max(dim=1).values\n")
    # a wrong solution that raises is not one the check caught: the check never saw an output
    (problem / "solutions" / "wrong" / "raises.py").write_text("def custom_kernel(data):\n    raise ValueError('no')\n")
    other = tmp_path / "other"
    new_gpumode_assignment(other, problem)
    result = runner.invoke(app, ["solutions", "rowmax", "--root", str(other)])
    flat = " ".join(result.output.split())
    assert result.exit_code == 1 and "same_as_max.py" in flat and "raises.py" in flat
    assert "wrong/raises.py fail one error error NO" in flat and "raised ValueError: no" in flat
    assert "2 of 5 solutions are not judged as they must be" in flat


def test_solutions_of_an_assignment_of_our_own_is_a_clear_error():
    result = runner.invoke(app, ["solutions", "histogram", "--root", str(ROOT)])
    assert result.exit_code == 2 and "not over a course folder" in result.output
    with pytest.raises(AssignmentError):
        get_assignment(ROOT / "kernels", "nosuch")
