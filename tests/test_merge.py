"""Shipping back what a device session made (issue 29, part 6): tools/gpu_session.sh archives only the
files the session wrote under logs/, and `report merge` brings them in, checked, never overwriting,
and a second merge of the same files changes nothing."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import LOGS, ROOT, with_sources
from typer.testing import CliRunner

from reporter import sources, store
from reporter.cli import app

runner = CliRunner()


def _words(text: str) -> str:
    return " ".join(text.split())


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


STEP = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from reporter import sources, store
from reporter.assignments import get_assignment

v = get_assignment(Path({root!r}) / "kernels", "flashattn").version("v16")
run = store.runs(Path("logs"), "flashattn", v.name)[-1]
code = v.snapshot(Path({root!r}), run.code.config)
text = code.files[0].text + "\\n# an edit made on the node\\n"
code.files[0] = code.files[0].model_copy(update={{"text": text, "sha256": sources.sha256_of(text)}})
new = run.model_copy(update={{"code": code, "run_id": "20991231T000000000Z_h100_benchmark"}})
path = store.save_new(new, Path("logs"))
(path.parent / f"{{new.run_id}}.ncu-rep.gz").write_bytes(b"report")
print("wrote", path)
"""


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A GPU node's checkout (v16's records, the store, tools/) on which tools/gpu_session.sh runs one
    step: a new run of v16 whose code changed since (its text new to the store), with a file beside it.
    Returns (the node's logs, the archive the session shipped back, the new record)."""
    node = tmp_path / "node"
    shutil.copytree(LOGS / "flashattn" / "v16_launch_plan", node / "logs" / "flashattn" / "v16_launch_plan")
    with_sources(node / "logs")
    (node / "tools").mkdir()
    for script in ("gpu_session.sh", "gpu_env.sh"):
        shutil.copy(ROOT / "tools" / script, node / "tools" / script)
    (node / "step.py").write_text(STEP.format(root=str(ROOT)))
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("REPORT_GIT_COMMIT", None)
    refused = subprocess.run(["bash", "tools/gpu_session.sh", "!python3 step.py"], cwd=node, env=env,
                             capture_output=True, text=True, timeout=120)
    # the device copy's git state is the session's start: the caller must say the checkout's
    assert refused.returncode == 2 and "REPORT_GIT_COMMIT" in refused.stderr and not out.exists()
    env |= {"REPORT_GIT_COMMIT": "0123456789abcdef0123456789abcdef01234567", "REPORT_GIT_DIRTY": "0"}
    done = subprocess.run(["bash", "tools/gpu_session.sh", "!python3 step.py"], cwd=node, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "shipped back: 3 new files" in done.stdout, done.stdout + done.stderr
    path = node / "logs" / "flashattn" / "v16_launch_plan" / "20991231T000000000Z_h100_benchmark.json.gz"
    return node / "logs", out / "new_logs.tgz", path


def test_the_session_archive_holds_only_what_the_session_wrote(session):
    _, archive, path = session
    with tarfile.open(archive) as tar:
        names = sorted(tar.getnames())
    edited = store.load(path).code.files[0].sha256  # the one text the store did not have
    assert store.load(path).code.git_commit == "0123456789abcdef0123456789abcdef01234567"  # the caller's, not the copy's
    assert names == sorted([f"logs/flashattn/v16_launch_plan/{path.name}",
                            f"logs/flashattn/v16_launch_plan/{store.stem(path)}.ncu-rep.gz", f"logs/sources/{edited}.gz"])


def test_merge_brings_the_new_record_and_its_text_in_and_a_second_merge_changes_nothing(session, tmp_path):
    _, archive, path = session
    here = tmp_path / "here" / "logs"
    shutil.copytree(LOGS / "flashattn" / "v16_launch_plan", here / "flashattn" / "v16_launch_plan")
    with_sources(here)
    before = len(store.runs(here, "flashattn", "v16_launch_plan"))
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 0, r.output
    assert "3 files added (1 record), 0 already here, 0 conflicts, 0 refused" in _words(r.stdout)
    runs = store.runs(here, "flashattn", "v16_launch_plan")
    assert len(runs) == before + 1
    merged = next(x for x in runs if x.run_id == store.stem(path))
    assert "an edit made on the node" in sources.read(here, merged.code.files[0])
    snapshot = {p: p.read_bytes() for p in here.rglob("*") if p.is_file()}
    again = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert again.exit_code == 0 and "0 files added (0 records), 3 already here" in _words(again.stdout), again.output
    assert {p: p.read_bytes() for p in here.rglob("*") if p.is_file()} == snapshot


def test_a_folder_merges_as_the_archive_does(session, tmp_path):
    node, _, path = session
    here = with_sources(tmp_path / "here")
    r = runner.invoke(app, ["merge", str(node.parent), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 0, r.output
    assert (here / "flashattn" / "v16_launch_plan" / path.name).read_bytes() == path.read_bytes()


def test_nothing_here_is_overwritten(session, tmp_path):
    _, archive, path = session
    here = with_sources(tmp_path / "here")
    target = here / "flashattn" / "v16_launch_plan" / path.name
    target.parent.mkdir(parents=True)
    target.write_text("{}")
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 1 and "conflict" in r.stderr and path.name in _words(r.stderr)
    assert target.read_text() == "{}"


def test_what_cannot_be_checked_is_refused(tmp_path):
    here = with_sources(tmp_path / "here")
    run = store.runs(LOGS, "histogram", "v07_lean_launch")[-1]
    stranger = run.model_copy(deep=True)
    stranger.code.files[0] = stranger.code.files[0].model_copy(update={"sha256": "f" * 64})
    archive = tmp_path / "a.tgz"
    archive.write_bytes(_tgz({
        f"logs/sources/{'0' * 64}": b"not the text of that hash",
        f"logs/sources/{'1' * 64}.gz": b"no gzip stream",
        f"logs/histogram/v07_lean_launch/{run.run_id}.json": store.dumps(stranger).encode(),
    }))
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 1
    assert "do not hash to its name" in _words(r.stderr) and "neither shipped nor in" in _words(r.stderr)
    assert "not a gzip stream" in _words(r.stderr)
    assert not (here / "sources" / ("0" * 64)).exists() and not sources.has(here, "1" * 64)
    assert not (here / "histogram").exists()
    unsafe = tmp_path / "b.tgz"
    unsafe.write_bytes(_tgz({"logs/../escape.json": b"{}"}))
    r = runner.invoke(app, ["merge", str(unsafe), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 2 and "not a plain file under logs/" in _words(r.stderr)
    assert not (tmp_path / "escape.json").exists()


def test_a_record_that_would_break_later_or_lies_elsewhere_is_refused_not_half_merged(tmp_path):
    """A packed array that does not decode (caught now, not by the first report that reads it), a
    run under another version's folder, a schema-1 record whose embedded text is not the one its
    sha256 names: each refused with why, and the merge goes on with the rest."""
    here = with_sources(tmp_path / "here")
    run = store.runs(LOGS, "histogram", "v07_lean_launch", case="benchmark")[-1]
    good = store.dumps(run)
    corrupt = json.loads(good)
    corrupt["timing"]["samples_ms"] = "f64z:AAAA"
    corrupt["run_id"] = "20990101T000000000Z_h100_benchmark"
    schema_1 = json.loads(good)
    schema_1["schema_version"] = 1
    schema_1["run_id"] = "20990101T000000001Z_h100_benchmark"
    schema_1["code"]["files"][0]["text"] = "not the text of that hash\n"
    v07 = "logs/histogram/v07_lean_launch"
    archive = tmp_path / "c.tgz"
    archive.write_bytes(_tgz({
        f"{v07}/20990101T000000000Z_h100_benchmark.json": json.dumps(corrupt).encode(),
        f"logs/histogram/v06_single_launch/{run.run_id}.json": good.encode(),
        f"{v07}/20990101T000000001Z_h100_benchmark.json": json.dumps(schema_1).encode(),
        f"{v07}/{run.run_id}.json": good.encode(),
    }))
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 1, r.output
    err = _words(r.stderr)
    assert "field samples_ms: a packed array that does not decode" in err
    assert f"belongs at logs/histogram/v07_lean_launch/{run.run_id}.json.gz" in err
    assert "hashes to" in err and "1 files added" in _words(r.stdout)
    # shipped plain, kept compressed: the same JSON bytes
    (kept,) = (here / "histogram" / "v07_lean_launch").iterdir()
    assert kept.name == f"{run.run_id}.json.gz" and store.read_text(kept) == good


def test_a_probes_attachment_comes_in_as_it_is_whatever_json_it_holds(tmp_path):
    """A trace probe's raw stamps are a JSON list (xz-compressed), kept beside its record under a name the record
    lists in ``attachments``: the merge copies it as it is, where it refused it as a record that is not an object;
    a list that no record names is still refused."""
    here = with_sources(tmp_path / "here")
    folder = "devices/h100/probes"
    stem = "20261127T130914977Z_trace_test_medium"
    record = (LOGS / folder / f"{stem}.json.gz").read_bytes()
    raw = (LOGS / folder / f"{stem}_raw.json.xz").read_bytes()
    archive = tmp_path / "a.tgz"
    archive.write_bytes(_tgz({f"logs/{folder}/{stem}.json.gz": record, f"logs/{folder}/{stem}_raw.json.xz": raw,
                              f"logs/{folder}/20991231T000000000Z_stray.json": b"[1, 2, 3]"}))
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert (here / folder / f"{stem}_raw.json.xz").read_bytes() == raw
    assert (here / folder / f"{stem}.json.gz").is_file()
    assert r.exit_code == 1 and "20991231T000000000Z_stray.json" in _words(r.stderr)
    assert "_raw.json.xz" not in _words(r.stderr)


def test_a_session_refuses_the_copys_own_head_when_its_code_moved_on(tmp_path):
    """On the device `git rev-parse HEAD` is the copy's start (the session's first call), not the commit the tree
    came from: a session told that hash while kernels/ differ from it would label its records with code that did not
    run, so it stops before any step; the same hash over an unchanged tree, or the caller's own hash, runs."""
    node = tmp_path / "node"
    (node / "tools").mkdir(parents=True)
    (node / "kernels").mkdir()
    for script in ("gpu_session.sh", "gpu_env.sh"):
        shutil.copy(ROOT / "tools" / script, node / "tools" / script)
    (node / "kernels" / "k.cu").write_text("// first\n")
    (node / "logs").mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=node, check=True)
    subprocess.run([*git, "add", "-A"], cwd=node, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=node, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=node, capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "OUT": str(tmp_path / "out"), "REPORT_GIT_COMMIT": head, "REPORT_GIT_DIRTY": "0",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def session() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "tools/gpu_session.sh", "!true"], cwd=node, env=env, capture_output=True,
                              text=True, timeout=120)

    assert session().returncode == 0  # the tree is the commit's: the label is right
    (node / "kernels" / "k.cu").write_text("// changed since\n")
    refused = session()
    assert refused.returncode == 2 and "this copy's own HEAD" in refused.stderr
    env["REPORT_GIT_COMMIT"] = "0123456789abcdef0123456789abcdef01234567"  # the checkout's, computed there
    assert session().returncode == 0


def test_a_shipped_text_in_either_form_is_kept_compressed_and_mends_a_changed_one_here(tmp_path):
    """An older node ships plain <sha256> blobs, a newer one <sha256>.gz: either is verified and kept as
    <sha256>.gz. A text stored here whose blob no longer gives it back is put right by the shipped one."""
    here = tmp_path / "here"
    old_text, new_text, mended = b"print('plain')\n", b"print('gz')\n", b"print('mended')\n"
    sha = {t: hashlib.sha256(t).hexdigest() for t in (old_text, new_text, mended)}
    sources.blob_path(here, sha[mended]).parent.mkdir(parents=True)
    sources.blob_path(here, sha[mended]).write_bytes(sources.encode(b"changed by hand\n"))
    archive = tmp_path / "a.tgz"
    archive.write_bytes(_tgz({
        f"logs/sources/{sha[old_text]}": old_text,
        f"logs/sources/{sha[new_text]}.gz": sources.encode(new_text),
        f"logs/sources/{sha[mended]}": mended,
    }))
    r = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert r.exit_code == 0, r.output
    assert "3 files added (0 records), 0 already here, 0 conflicts, 0 refused" in _words(r.stdout)
    assert sorted(p.name for p in (here / "sources").iterdir()) == sorted(f"{sha[t]}.gz" for t in sha)
    for t in sha:
        assert gzip.decompress(sources.blob_path(here, sha[t]).read_bytes()) == t
    again = runner.invoke(app, ["merge", str(archive), "--root", str(ROOT), "--logs", str(here)])
    assert again.exit_code == 0 and "0 files added (0 records), 3 already here" in _words(again.stdout)
