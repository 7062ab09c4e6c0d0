"""The migration to records of schema 2 (issue 29), proved on the real committed logs: every record
read the same, field by field, sample by sample (bit for bit) and text by text (byte for byte),
before and after; the committed logs are all in the current layout; `report migrate` is idempotent."""

from __future__ import annotations

import json
import shutil
import os
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import LOGS, ROOT
from typer.testing import CliRunner

from reporter import migrate, packed, sources, store
from reporter.cli import app
from reporter.records import SCHEMA_VERSION

# the last commit whose logs/ held schema-1 records (indented, texts embedded, arrays as lists)
BEFORE_MIGRATION = "4956f6e"
runner = CliRunner()


def _records() -> list[Path]:
    files = migrate.record_files(LOGS)
    attached = migrate.probe_attachments(files)  # kept as the probe left them
    return [p for p in files if p not in attached and migrate.is_record(p)]


def _as_lists(x: object) -> object:
    """Packed arrays and run-length coded reasons written out as lists, as schema 1 wrote them."""
    if isinstance(x, str) and x.startswith(packed.PREFIX):
        return packed.unpack(x)
    if isinstance(x, dict):
        if set(x) == {"runs"} and isinstance(x["runs"], list):
            return packed.read_reason_runs(x)
        return {k: _as_lists(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_as_lists(v) for v in x]
    return x


def schema_1_text(record: store.AnyStored, logs: Path) -> str:
    """A run, sweep, ceilings, cross-check or re-verification as the schema-1 writer wrote it: indented,
    every source text embedded in its code file, the per-sample arrays as lists."""
    assert record.kind != "probe", "probe records are new in schema 2"
    data = _as_lists(json.loads(record.model_dump_json()))
    assert isinstance(data, dict)
    texts = {f.sha256: sources.read(logs, f) for f in sources.files(record)}
    runs = [data] if data["kind"] == "run" else \
        [c[side] for c in data["cases"] for side in ("after", "before")] if data["kind"] == "reverification" else []
    for run in runs:
        run["schema_version"] = 1
        for f in run["code"]["files"]:
            f["text"] = texts[f["sha256"]]
    data["schema_version"] = 1
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def test_every_committed_record_is_in_the_current_layout():
    """`migrate --check` reads every record, decodes every packed array and compares each file with the
    current layout's text of its record (which names the current schema version)."""
    r = runner.invoke(app, ["migrate", "--check", "--root", str(ROOT)])
    assert r.exit_code == 0, r.output
    n = len(_records())
    assert f"{n} of {n} records in the current layout" in " ".join(r.stdout.split())


def test_migrating_a_schema_1_record_gives_the_committed_file_and_the_same_record(tmp_path):
    """Committed records written back out as schema 1 wrote them, then migrated: the file is byte for
    byte the committed one, and the loader reads the same record from both. The first and the last
    record of each kind in each folder (every version, every kind of record, the oldest and the newest
    writer of each): the whole history is read through the loader by the test after next. Each folder's
    newest record of each kind and each assignment's oldest (the oldest writers are an assignment's first
    sessions; a folder's first record between them was written by one of those writers again)."""
    logs = tmp_path / "logs"
    sample: dict[tuple[Path, str], list[Path]] = {}
    for p in _records():
        kind = json.loads(store.read_text(p)).get("kind", "")
        if kind in ("probe", "same_code", "microbench"):  # new in schema 2: never written as schema 1
            continue
        sample.setdefault((p.parent, kind), []).append(p)
    oldest: dict[tuple[str, str], Path] = {}
    for (folder, kind), group in sample.items():
        key = (folder.relative_to(LOGS).parts[0], kind)
        oldest[key] = min(oldest.get(key, min(group)), min(group), key=lambda q: q.name)
    picked = sorted({max(group) for group in sample.values()} | set(oldest.values()))
    kinds = {k for _, k in sample}
    assert {"run", "sweep", "crosscheck", "ceilings", "reverification"} <= kinds, kinds
    checked = 0
    for p in picked:
        committed = store.load(p)
        rel = p.relative_to(LOGS)
        old = (logs / rel).with_name(store.stem(p) + ".json")  # as schema 1 named it too
        old.parent.mkdir(parents=True, exist_ok=True)
        old.write_text(schema_1_text(committed, LOGS))
        v1 = store.load(old)
        assert v1.schema_version == SCHEMA_VERSION  # read as the current schema, in memory
        now, _ = migrate.migrate_file(old, logs)
        assert now == logs / rel and not old.exists(), rel
        assert store.read_text(now) == store.read_text(p), rel
        assert migrate.same_record(logs, v1, store.load(now)) is None
        checked += 1
    assert checked > 80, checked


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=False)


@pytest.fixture(scope="module")
def before_migration() -> dict[str, bytes]:
    """logs/ at the commit before the migration, path -> bytes (the test is skipped in a clone
    without that history, a shallow one say)."""
    if _git("cat-file", "-e", f"{BEFORE_MIGRATION}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {BEFORE_MIGRATION} (logs/ before the migration) is not in this clone")
    names = _git("ls-tree", "-r", "--name-only", BEFORE_MIGRATION, "--", "logs").stdout.decode().split()
    wanted = [n for n in names if n.endswith(".json")]
    batch = subprocess.run(["git", "cat-file", "--batch"], cwd=ROOT, capture_output=True, check=True,
                           input="".join(f"{BEFORE_MIGRATION}:{n}\n" for n in wanted).encode())
    out, data, at = {}, batch.stdout, 0
    for n in wanted:
        header_end = data.index(b"\n", at)
        size = int(data[at:header_end].split()[2])
        out[n] = data[header_end + 1: header_end + 1 + size]
        at = header_end + 1 + size + 1
    return out


def test_every_record_of_the_logs_before_the_migration_reads_the_same_after_it(before_migration, tmp_path):
    """The proof on the real history: each schema-1 file of the commit before the migration and the
    file now, through the public loader: the same fields, every sample bit for bit, every source text
    byte for byte. Probe outputs that were not records are now probe records holding the same data.
    History does not change: the whole of it was compared when the migration landed, and each run compares
    a third of the records (every probe output, and the records whose path's CRC-32 is 0 modulo 3: the same
    third each run); REPORT_TEST_ALL_HISTORY=1 compares all of them."""
    every = os.environ.get("REPORT_TEST_ALL_HISTORY") == "1"
    compared = probes = 0
    for name, raw in before_migration.items():
        if not every and b'"schema_version"' in raw and zlib.crc32(name.encode()) % 3:
            continue
        now = ROOT / (name + ".gz")  # a record, kept compressed since; a tool's output kept as it was
        now = now if now.is_file() else ROOT / name
        assert now.is_file(), f"{name} is gone"
        if b'"schema_version"' not in raw:  # a probe's own output then
            if "/probes/" in name:
                record = store.load(now)
                assert record.kind == "probe" and record.data == json.loads(raw), name
                probes += 1
            continue
        old = tmp_path / "r.json"
        old.write_bytes(raw)
        before, after = store.load(old), store.load(now)
        assert all(f.text is not None for f in sources.files(before))
        assert migrate.same_record(LOGS, before, after) is None, name
        compared += 1
    assert compared >= (920 if every else 250) and probes >= 11


def test_migrate_is_idempotent_and_leaves_what_is_no_record(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "flashattn" / "v06_wgmma", logs / "flashattn" / "v06_wgmma")
    shutil.copytree(LOGS / "sources", logs / "sources")
    selftest = logs / "flashattn" / "v06_wgmma" / "selftest"
    r = runner.invoke(app, ["migrate", "--root", str(ROOT), "--logs", str(logs)])
    assert r.exit_code == 0, r.output
    assert "0 records rewritten" in r.stdout and "left as it is (no record, or a probe's attachment)" in r.stdout
    assert any(selftest.glob("*.json"))
    # a schema-1 record dropped in is rewritten once; the second run changes nothing
    run = store.runs(LOGS, "flashattn", "v06_wgmma")[-1]
    old = logs / "flashattn" / "v06_wgmma" / f"{run.run_id}.json"
    old.write_text(schema_1_text(run, LOGS))
    r = runner.invoke(app, ["migrate", "--root", str(ROOT), "--logs", str(logs)])
    assert r.exit_code == 0 and "1 records rewritten" in r.stdout, r.output
    again = runner.invoke(app, ["migrate", "--root", str(ROOT), "--logs", str(logs)])
    assert "0 records rewritten" in again.stdout
    assert runner.invoke(app, ["migrate", "--check", "--root", str(ROOT), "--logs", str(logs)]).exit_code == 0


def test_a_record_that_would_change_is_left_as_it_was(tmp_path, monkeypatch):
    run = store.runs(LOGS, "histogram", "v07_lean_launch")[-1]
    p = tmp_path / "r.json"
    p.write_text(schema_1_text(run, LOGS))
    before = p.read_bytes()
    real = store.dumps
    monkeypatch.setattr(store, "dumps", lambda r: real(r.model_copy(update={"seed": r.seed + 1})))
    with pytest.raises(migrate.MigrationError, match="would change in the rewrite: seed"):
        migrate.migrate_file(p, tmp_path)
    assert p.read_bytes() == before
