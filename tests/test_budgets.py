"""The tree travels (issue 29): the tracked files, without .git, stay within 30 MB, so a copy of the
working tree fits the GPU machine's 64 MiB with room for the records matmul and qkv will add."""

from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT

from reporter import migrate, store

TREE_BUDGET_BYTES = 30_000_000


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [n for n in out.stdout.decode().split("\0") if n]


def test_the_tracked_tree_stays_within_its_budget():
    sizes = {n: (ROOT / n).stat().st_size for n in _tracked() if (ROOT / n).is_file()}
    total = sum(sizes.values())
    logs = sum(v for n, v in sizes.items() if n.startswith("logs/"))
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total <= TREE_BUDGET_BYTES, (f"the tracked tree is {total / 1e6:.1f} MB (logs/ {logs / 1e6:.1f} MB), over "
                                        f"{TREE_BUDGET_BYTES / 1e6:.0f} MB; largest: {biggest}")


def test_every_tracked_record_is_one_compressed_line():
    """A record is kept as one line of JSON (schema 2), gzip-compressed: an indented one would come from
    a writer that bypassed reporter.store (and would likely embed its sources too, which
    tests/test_source_store.py checks), a plain one from an older tool (`report migrate` compresses it)."""
    attached = migrate.probe_attachments([ROOT / n for n in _tracked() if "/probes/" in n])  # kept as a probe left them
    names = [n for n in _tracked() if n.startswith("logs/") and "/selftest/" not in n and ROOT / n not in attached]
    plain = [n for n in names if n.endswith(".json") and store.claims_record((ROOT / n).read_bytes())]
    assert not plain, f"records committed uncompressed (`report migrate` compresses them): {plain[:5]}"
    texts = {n: store.record_bytes((ROOT / n).read_bytes(), ROOT / n) for n in names if n.endswith(".json.gz")}
    records = {n: t for n, t in texts.items() if store.claims_record(t)}
    assert len(records) > 1400
    for n, data in records.items():
        assert data.endswith(b"\n") and data.count(b"\n") == 1, f"{n}: not one line"
