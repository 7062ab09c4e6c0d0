"""Numeric options that are not finite, or out of their range, get one clear line naming the
option and exit 2 (issue 16): `--fail-if-slower nan` used to pass every diff and
`--min-effect inf` called any change 'same'."""

from __future__ import annotations

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from reporter.cli import app

runner = CliRunner()


@pytest.mark.parametrize("args,says", [
    (["diff", "transform", "v08", "v10", "--fail-if-slower", "nan"], "--fail-if-slower: nan is not a finite number"),
    (["diff", "transform", "v08", "v10", "--min-effect", "inf"], "--min-effect: inf is not a finite number"),
    (["diff", "transform", "v08", "v10", "--min-effect", "-1"], "--min-effect: -1 is below 0"),
    (["diff", "transform", "v08", "v10", "--min-effect", "250"], "--min-effect: 250 is above 100"),
    (["run", "transform", "--budget-s", "0"], "--budget-s: 0 is not above 0"),
    (["run", "transform", "--rest-s", "-inf"], "--rest-s: -inf is not a finite number"),
    (["run", "transform", "--target-rel-stderr", "nan"], "--target-rel-stderr: nan is not a finite number"),
    (["sweep", "transform", "v08", "--budget-s", "inf"], "--budget-s: inf is not a finite number"),
    (["crosscheck", "transform", "v10", "--rest-s", "nan"], "--rest-s: nan is not a finite number"),
    (["reverify", "transform", "v10", "--budget-s", "-2"], "--budget-s: -2 is not above 0"),
])
def test_a_number_option_out_of_range_is_one_clear_error(args, says):
    result = runner.invoke(app, [*args, "--root", str(ROOT)])
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split()), result.output


def test_finite_options_in_range_still_work():
    result = runner.invoke(app, ["diff", "transform", "v08", "v10", "--min-effect", "0.5", "--fail-if-slower", "50",
                                 "--no-code", "--root", str(ROOT)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args,says", [
    (["crosscheck", "transform", "v10", "-c", "nope"], "--case: no case 'nope' in"),
    (["crosscheck", "transform", "v10", "--no-course", "--do-bench-rep-ms", "0"],
     "--do-bench-rep-ms: 0.0 is not a positive number of milliseconds"),
    (["crosscheck", "transform", "v10", "-c", "benchmark", "--course-root", "."],
     "--case: a course harness run times the course's cases; give --case with --no-course"),
])
def test_a_crosscheck_case_it_cannot_time_is_refused_before_the_gpu_is_asked_for(args, says):
    """`--case` is checked before the GPU: a machine without one hears about the case first."""
    result = runner.invoke(app, [*args, "--root", str(ROOT)])
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split()), result.output
    assert "CUDA" not in result.output
