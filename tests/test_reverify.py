"""`report reverify`'s CPU side: reading an export back (the earlier code a re-verification
records), refusing an export of another version, and the record's round trip through the store."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import with_sources
from typer.testing import CliRunner

from reporter import store
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.export import render
from reporter.harness.reverify import ReverifyError, before_snapshot, load_submission
from reporter.records import Reverification, ReverifyCase
from reporter.submission import SubmissionError, read_submission

ROOT = Path(__file__).resolve().parents[1]
FLASH = get_assignment(ROOT / "kernels", "flashattn")


def exported(tmp_path: Path, short: str) -> Path:
    v = FLASH.version(short)
    out = tmp_path / v.name / "submission.py"
    out.parent.mkdir(parents=True)
    out.write_text(render(ROOT, ROOT / "logs", FLASH, v).text)
    return out


def test_an_export_reads_back_to_the_files_it_embeds(tmp_path):
    v = FLASH.version("v21")
    sub = read_submission(exported(tmp_path, "v21"))
    closure = v.closure()
    kernels = [f for f in sub.files if not f.rel.startswith("reporter/")]
    assert [f.rel for f in kernels] == closure.rels()
    assert [f.text for f in kernels] == [p.read_text() for p in closure.paths()]
    assert [f.origin for f in kernels] == [p.relative_to(ROOT).as_posix() for p in closure.paths()]
    snap = before_snapshot(sub, {"STAGES": 2})
    assert snap.digest == v.snapshot(ROOT).digest and snap.git_commit == sub.commit


def test_an_export_of_another_version_or_a_stray_file_is_refused(tmp_path):
    path = exported(tmp_path, "v20")
    with pytest.raises(ReverifyError, match="an export of v20_wide_stores.py, not of v21_staged_stores"):
        load_submission(path, FLASH.version("v21"))
    stray = tmp_path / "stray.py"
    stray.write_text("x = 1\n")
    with pytest.raises(SubmissionError, match="holds no embedded files"):
        read_submission(stray)


def test_the_record_round_trips_and_says_whether_every_case_is_the_same(tmp_path):
    run = store.runs(ROOT / "logs", "flashattn", "v21_staged_stores")[-1]
    cases = [ReverifyCase(case_name=run.case_name, after=run, before=run, verdict="same", summary="same within noise")]
    rv = Reverification(run_id="20261122T000000000Z_h100", session_id="s", assignment="flashattn",
                        version="v21_staged_stores", created_utc=datetime.now(timezone.utc), device=run.device,
                        before_export="x/submission.py", before_export_sha256="0" * 64, cases=cases)
    path = store.save(rv, store.reverification_path(tmp_path, rv), logs=with_sources(tmp_path))
    assert path == tmp_path / "flashattn" / "v21_staged_stores" / "reverify" / "20261122T000000000Z_h100.json.gz"
    (back,) = store.reverifications(tmp_path, "flashattn")
    assert back.same and back.cases[0].after.run_id == run.run_id
    assert store.runs(tmp_path, "flashattn") == []  # a re-verification is not a run of the version
    cases[0].verdict = "slower"
    assert not rv.same


def test_the_command_names_a_missing_export(tmp_path):
    result = CliRunner().invoke(app, ["reverify", "flashattn", "-v", "v14", "--before-dir", str(tmp_path),
                                      "--root", str(ROOT)])
    assert result.exit_code == 2
    assert "v14_multicast/submission.py does not exist" in result.output
