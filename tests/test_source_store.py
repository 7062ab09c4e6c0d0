"""The source store (issue 29): each text a record ran is kept once, under logs/sources/<sha256>.gz; a record
names its files by path and sha256 and never embeds a text; everything reads a recorded file's text
through reporter.sources.read, and a text the store lacks is said plainly while the rest works."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import LOGS, ROOT, with_sources
from typer.testing import CliRunner

from reporter import sources, store
from reporter.analysis.diff import code_diff
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.records import SourceFile

runner = CliRunner()


def _record_files() -> list[Path]:
    return sorted(p for p in LOGS.rglob("*.json.gz") if "sources" not in p.relative_to(LOGS).parts[:1])


def _code_files(data: object):
    """Every {path, sha256, ...} object of a record's code snapshots, as stored: a run's "code", a
    same-code proof's "before" and "after" (a re-verification's "before" and "after" are runs)."""
    if isinstance(data, dict):
        for k, v in data.items():
            if k in ("code", "before", "after") and isinstance(v, dict) and "files" in v:
                yield from v.get("files", [])
            else:
                yield from _code_files(v)
    elif isinstance(data, list):
        for v in data:
            yield from _code_files(v)


def test_no_committed_record_embeds_a_source_text_and_every_text_it_names_is_stored():
    named: set[str] = set()
    for p in _record_files():
        data = json.loads(store.read_text(p))
        for f in _code_files(data):
            assert set(f) == {"path", "sha256"}, f"{p}: a code file stored with {sorted(set(f) - {'path', 'sha256'})}"
            named.add(f["sha256"])
    assert len(named) > 100
    files = list((LOGS / "sources").iterdir())
    assert all(p.name.endswith(sources.SUFFIX) for p in files), "a committed text not compressed (report migrate)"
    blobs = {sources.blob_name_sha(p.name): p for p in files}
    assert named <= set(blobs), f"texts named but not stored: {sorted(named - set(blobs))[:3]}"
    for name, p in blobs.items():
        text = sources.blob_text_bytes(p.name, p.read_bytes())
        assert hashlib.sha256(text).hexdigest() == name, f"{p} does not hash to its name"
    assert set(blobs) == named, f"stored texts no record names: {sorted(set(blobs) - named)[:3]}"


def test_a_new_record_references_its_texts_instead_of_embedding_them(tmp_path):
    """What the harness does for every run: a snapshot of the version's files (texts read from disk),
    saved. The record names the files; the texts land in the store once, whole, and read back the same."""
    v = get_assignment(ROOT / "kernels", "flashattn").version("v16")
    run = store.load(min((LOGS / "flashattn" / v.name).glob("*_benchmark.json.gz")))
    run.code = v.snapshot(ROOT, run.code.config)
    assert all(f.text is not None for f in run.code.files)
    logs = tmp_path / "logs"
    path = store.save(run, store.run_path(logs, run), logs=logs)
    raw = store.read_text(path)
    assert '"text"' not in raw and "__global__" not in raw and "custom_kernel" not in raw
    for f in run.code.files:
        blob = logs / "sources" / f"{f.sha256}.gz"
        assert gzip.decompress(blob.read_bytes()) == f.text.encode("utf-8")  # type: ignore[union-attr]
        assert blob.read_bytes()[4:8] == b"\0\0\0\0"  # gzip's MTIME field: no timestamp, the same bytes anywhere
    again = store.load(path)
    assert [sources.read(logs, f) for f in again.code.files] == [f.text for f in run.code.files]
    before = {p: p.stat().st_mtime_ns for p in (logs / "sources").iterdir()}
    store.save_new(run.model_copy(deep=True), logs)  # a second record of the same code
    assert {p: p.stat().st_mtime_ns for p in (logs / "sources").iterdir()} == before  # stored once, never rewritten


def test_a_record_is_never_written_naming_a_text_the_store_cannot_give_back(tmp_path):
    run = store.load(min((LOGS / "transform" / "v10_hw_cvt").glob("*.json.gz")))
    with pytest.raises(sources.SourceMissing, match="neither in memory nor in"):
        store.save(run, tmp_path / "r.json", logs=tmp_path)
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(sources.SourceCorrupt, match="hashes to"):
        sources.put(tmp_path, "text", sha256="0" * 64)


def test_read_says_which_file_and_blob_when_a_text_is_missing_or_changed(tmp_path):
    f = SourceFile(path="kernels/x/v01.py", sha256=sources.sha256_of("print(1)\n"))
    with pytest.raises(sources.SourceMissing, match=r"kernels/x/v01.py: its text \(sha256 [0-9a-f]{12}…\) is not in"):
        sources.read(tmp_path, f)
    sources.put(tmp_path, "print(1)\n")
    assert sources.read(tmp_path, f) == "print(1)\n"
    blob = sources.blob_path(tmp_path, f.sha256)
    blob.write_bytes(sources.encode(b"print(2)\n"))
    with pytest.raises(sources.SourceCorrupt, match="does not hash to its name"):
        sources.read(tmp_path, f)
    blob.write_bytes(b"print(1)\n")  # no gzip stream
    with pytest.raises(sources.SourceCorrupt, match="not a gzip stream"):
        sources.read(tmp_path, f)
    sources.put(tmp_path, "print(1)\n")  # the right text in hand puts a changed blob right
    assert sources.read(tmp_path, f) == "print(1)\n"
    blob.unlink()
    plain = tmp_path / "sources" / f.sha256  # a plain blob of an older store, changed by hand
    plain.write_text("print(3)\n")
    assert sources.put(tmp_path, "print(1)\n") == blob and not plain.exists()  # put right as .gz, the plain one gone
    assert sources.read(tmp_path, f) == "print(1)\n"


def test_an_older_stores_plain_texts_read_and_migrate_compresses_them_once(tmp_path):
    """A store written before blobs were compressed holds <sha256> plain: read as it is, and `report migrate`
    rewrites each as <sha256>.gz (a blob whose bytes do not hash to its name is left, and said)."""
    good = "print(1)\n"
    f = SourceFile(path="kernels/x/v01.py", sha256=sources.sha256_of(good))
    folder = tmp_path / "logs" / "sources"
    folder.mkdir(parents=True)
    (folder / f.sha256).write_text(good)
    (folder / ("0" * 64)).write_text("changed by hand")
    (folder / f".{'1' * 64}.gz.tmp").write_text("a writer's leftover: not a blob")
    logs = tmp_path / "logs"
    assert sources.read(logs, f) == good and sources.has(logs, f.sha256)
    assert sources.put(logs, good) == folder / f.sha256  # there already, in its old form: not written twice
    check = runner.invoke(app, ["migrate", "--check", "--root", str(ROOT), "--logs", str(logs)])
    assert check.exit_code == 1 and "2 source texts not compressed" in check.stdout
    r = runner.invoke(app, ["migrate", "--root", str(ROOT), "--logs", str(logs)])
    assert r.exit_code == 1 and "1 source texts compressed" in r.stdout and "do not hash to its name" in r.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{f.sha256}.gz", "0" * 64, f".{'1' * 64}.gz.tmp"])
    assert sources.read(logs, f) == good
    (folder / ("0" * 64)).unlink()
    (folder / f.sha256).write_text("changed by hand, beside its good .gz")
    again = runner.invoke(app, ["migrate", "--root", str(ROOT), "--logs", str(logs)])
    assert again.exit_code == 0 and "compressed" not in again.stdout, again.output
    assert not (folder / f.sha256).exists() and sources.read(logs, f) == good  # the .gz stands


@pytest.fixture
def logs_without_one_text(tmp_path: Path) -> tuple[Path, str]:
    """flashattn's v01 and v02 records with the store, less the text of v02's .py."""
    logs = tmp_path / "logs"
    for v in ("v01_naive", "v02_fused_triton"):
        shutil.copytree(LOGS / "flashattn" / v, logs / "flashattn" / v)
    shutil.copytree(LOGS / "devices", logs / "devices")
    with_sources(logs)
    run = store.runs(logs, "flashattn", "v02_fused_triton")[-1]
    gone = next(f for f in run.code.files if f.path.endswith("v02_fused_triton.py"))
    sources.existing_blob(logs, gone.sha256).unlink()  # type: ignore[union-attr]
    return logs, gone.path


def test_show_and_diff_say_a_text_is_missing_and_still_answer(logs_without_one_text):
    logs, gone = logs_without_one_text
    r = runner.invoke(app, ["show", "flashattn", "v02", "--root", str(ROOT), "--logs", str(logs)],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    line = next(line for line in r.stdout.splitlines() if gone in line)
    assert "text unavailable" in line and "is not in the source store" in line
    assert "peers timed in the same run" in r.stdout  # the rest of the record is shown
    d = runner.invoke(app, ["diff", "flashattn", "v01", "v02", "--root", str(ROOT), "--logs", str(logs)],
                      env={"COLUMNS": "200"})
    assert d.exit_code == 0, d.output
    assert "not compared" in d.stdout and gone in d.stdout and "faster" in d.stdout


def test_code_diff_reads_texts_through_the_store():
    a = store.runs(LOGS, "flashattn", "v01_naive")[-1]
    b = store.runs(LOGS, "flashattn", "v02_fused_triton")[-1]
    diffs = code_diff(a, b, logs=LOGS)
    assert diffs and all(not d.unreadable for d in diffs)
    assert any("+@triton.jit" in d.unified for d in diffs)
