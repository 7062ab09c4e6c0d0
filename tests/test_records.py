"""Records: round trip through the store, atomic writes, and errors that name file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reporter import store
from reporter.standing import standing_runs
from reporter.records import DeviceCeilings, Run, Sweep, derive, gpu_slug

from conftest import LOGS, with_sources


def committed_runs() -> list[Path]:
    return sorted(p for p in LOGS.glob("*/*/*.json.gz") if p.parts[-3] != "devices")


def test_every_committed_record_loads():
    paths = committed_runs() + sorted(LOGS.glob("devices/*/*.json.gz")) + sorted(LOGS.glob("*/*/sweeps/*.json.gz"))
    assert paths, "no committed records"
    kinds = {type(store.load(p)) for p in paths}
    assert {Run, DeviceCeilings, Sweep} <= kinds


def test_round_trip_is_lossless(tmp_path):
    src = committed_runs()[0]
    run = store.load(src)
    out = store.save(run, tmp_path / "copy.json", logs=with_sources(tmp_path))
    again = store.load(out)
    assert again == run
    assert again.timing is None or again.timing.samples_ms == run.timing.samples_ms


def test_write_is_atomic_and_leaves_no_temp(tmp_path, monkeypatch):
    run = store.load(committed_runs()[0])
    target = tmp_path / "r.json"
    store.save(run, target, logs=LOGS)
    before = target.read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        store.save(run.model_copy(update={"version": "changed"}), target, logs=LOGS)
    assert target.read_text() == before, "a failed write must not damage the old record"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"], "no temp file left behind"


def test_malformed_json_names_file_and_position(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"schema_version": 1, "kind": "run",')
    with pytest.raises(store.RecordError, match=r"bad.json: not valid JSON \(line 1"):
        store.load(p)


def test_foreign_json_is_refused(tmp_path):
    p = tmp_path / "package.json"
    p.write_text(json.dumps({"name": "left-pad", "version": "1.0.0"}))
    with pytest.raises(store.RecordError, match="package.json: field 'schema_version' is missing"):
        store.load(p)


def test_bad_field_is_named(tmp_path):
    data = json.loads(store.read_text(committed_runs()[0]))
    data["timing"]["median_ms"] = "fast"
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data))
    with pytest.raises(store.RecordError, match=r"r.json: field 'timing.median_ms'"):
        store.load(p)


def test_unknown_field_is_an_error(tmp_path):
    data = json.loads(store.read_text(committed_runs()[0]))
    data["medain_ms"] = 1.0
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data))
    with pytest.raises(store.RecordError, match="medain_ms"):
        store.load(p)


def test_newer_schema_is_refused(tmp_path):
    data = json.loads(store.read_text(committed_runs()[0]))
    data["schema_version"] = 99
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data))
    with pytest.raises(store.RecordError, match="newer than this tool"):
        store.load(p)


def test_derived_figures_follow_from_work_and_time():
    run = next(r for r in store.runs(LOGS, "flashattn") if r.derived and r.case_name == "benchmark")
    ceilings = store.ceilings(LOGS, run.device.slug)[-1]
    d = derive(run.work, run.timing.median_ms, ceilings)
    assert d.tflops == pytest.approx(run.work.flops / (run.timing.median_ms / 1e3) / 1e12)
    assert d.fraction_of_ceiling == pytest.approx(d.tflops / ceilings.matmul_tflops["fp16"])
    assert d.floor_ms == pytest.approx(run.work.flops / (ceilings.matmul_tflops["fp16"] * 1e12) * 1e3)


@pytest.mark.parametrize("name,slug", [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                       ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA GeForce RTX 4090", "rtx-4090")])
def test_gpu_slug(name, slug):
    assert gpu_slug(name) == slug


def _pingpong_build():
    from reporter.records import KernelBuild

    return KernelBuild(kernel="attn_fwd_pingpong", source="v08_overlap.cu", compiler="nvrtc 13.0", arch="sm_90a",
                       options="--gpu-architecture=sm_90a -std=c++17 -lineinfo --ptxas-options=-v -DSTAGES=2",
                       registers=168, spill_stores=232, spill_loads=232, stack_bytes=152, barriers=16,
                       advisories=["(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized "
                                   "due to insufficient register resources for the function 'attn_fwd_pingpong'"])


def test_run_with_builds_round_trips(tmp_path):
    run = store.load(committed_runs()[0]).model_copy(update={"builds": [_pingpong_build()]})
    again = store.load(store.save(run, tmp_path / "r.json", logs=LOGS))
    assert again == run
    (b,) = again.builds
    assert (b.registers, b.spill_stores, b.spill_loads, b.stack_bytes) == (168, 232, 232, 152)
    assert b.performance_advisories() == b.advisories and b.spills


def test_record_without_builds_still_loads(tmp_path):
    src = committed_runs()[0]
    data = json.loads(store.read_text(src))
    data.pop("builds", None)  # as every record written before builds were kept
    p = tmp_path / "old.json"
    p.write_text(json.dumps(data))
    old = store.load(p)
    assert old.builds == []
    assert old.schema_version == data["schema_version"]


def test_sweeps_recorded_before_interleaving_read_as_sequential():
    from pathlib import Path

    from reporter import store

    root = Path(__file__).resolve().parents[1]
    sweeps = root / "logs" / "flashattn" / "v14_multicast" / "sweeps"
    old = store.load(sweeps / "20261122T051507265Z_h100_benchmark.json.gz")
    assert old.timing_order == "sequential"
