"""Probe outputs are records (issue 29, part 5): what tools/*_probe.py measured is a ProbeRecord under
logs/devices/<gpu>/probes/ (device, GPU state, command, code closure, results), shown by
`report show --probe`, and bound from a worklog as {{ probes.<name>... }}."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from conftest import LOGS, ROOT
from typer.testing import CliRunner

from reporter import sources, store
from reporter.analysis.facts import BindingError, ProbesFacts
from reporter.cli import app
from reporter.harness.probe import tool_closure
from reporter.records import ProbeRecord
from reporter.render.worklog import WorklogError, bind

runner = CliRunner()
PROBES = LOGS / "devices" / "h100" / "probes"


def test_every_file_in_a_probes_folder_is_a_probe_record_or_one_of_its_attachments():
    records = store.probes(LOGS)
    assert len(records) >= 17 and all(isinstance(r, ProbeRecord) for r in records)
    claimed = {f"{r.run_id}.json.gz" for r in records} | {a for r in records for a in r.attachments}
    for folder in LOGS.glob("devices/*/probes"):
        for p in folder.iterdir():
            assert p.name in claimed, f"{p}: no probe record names it"
    for r in records:
        for a in r.attachments:
            assert (PROBES / a).is_file(), a
        assert r.gpu == "h100" and r.description and r.name in r.run_id


def test_show_prints_a_probe_with_its_provenance_and_the_shape_of_its_results():
    r = runner.invoke(app, ["show", "--probe", "20261123T1217Z_host_call", "--root", str(ROOT)],
                      env={"COLUMNS": "150"})
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "probe host_call · h100 · 20261123T1217Z_host_call" in out
    assert "tools/host_call_probe.py" in out and "5b9679d" in out and "400 interleaved rounds" in out
    assert "'v16 call': {4 keys}" in out and "{{ probes.host_call.data... }}" in out
    newest = max((p for p in store.probes(LOGS) if p.name == "host_call"), key=lambda p: p.created_utc)
    by_name = runner.invoke(app, ["show", "--probe", "host_call", "--root", str(ROOT)], env={"COLUMNS": "150"})
    assert by_name.exit_code == 0 and newest.run_id in by_name.stdout  # a name: the newest of that name
    by_prefix = runner.invoke(app, ["show", "--probe", "20261123T0443Z", "--root", str(ROOT)])
    assert by_prefix.exit_code == 0 and "copy_ceiling_probe" in by_prefix.stdout
    missing = runner.invoke(app, ["show", "--probe", "nope", "--root", str(ROOT)])
    assert missing.exit_code == 2 and "host_call" in missing.stderr
    both = runner.invoke(app, ["show", "flashattn", "--probe", "host_call", "--root", str(ROOT)])
    assert both.exit_code == 2


def test_a_probe_written_on_the_gpu_records_its_device_state_and_code():
    """The first probe written by ProbeSession on the H100 (a session of tools/gpu_session.sh)."""
    newest = max((p for p in store.probes(LOGS) if p.name == "host_call"), key=lambda p: p.created_utc)
    if newest.device is None:
        pytest.skip("no probe record written by ProbeSession committed yet")
    assert newest.device.name.startswith("NVIDIA") and newest.gpu_before and newest.gpu_after
    assert newest.code is not None and newest.code.git_commit and newest.command.endswith("host_call_probe.py")
    paths = [f.path for f in newest.code.files]
    assert paths[0] == "tools/host_call_probe.py" and "kernels/transform/v16_lean_call.py" in paths
    assert all(sources.has(LOGS, f.sha256) for f in newest.code.files)


def test_a_worklog_binds_a_probe_by_name_or_id():
    import statistics

    ctx = {"probes": ProbesFacts(store.probes(LOGS, "h100"))}
    record = store.load(PROBES / "20261123T1217Z_host_call.json.gz")
    enqueue = record.data["cases"]["benchmark"]["v16 call"]["enqueue_us"]  # type: ignore[index]
    probe = "probes['20261123T1217Z_host_call']"
    text = (f"{{{{ {probe}.data.cases.benchmark['v16 call'].enqueue_us.median }}}} µs, "
            f"p90 {{{{ {probe}.data.cases.benchmark['v16 call'].enqueue_us.quantile(0.9) }}}}, "
            "{{ probes['20261123T0443Z_copy_ceiling_probe'].data.runs['benchmark memcpy'].do_bench_ms }} ms "
            f"({{{{ {probe}.when }}}}, commit {{{{ {probe}.commit }}}})")
    out = bind(text, ctx, Path("worklog.md"))
    assert out.startswith(f"{statistics.median(enqueue):.2f} µs") and "(2026-11-23 12:17 UTC, commit 5b9679d)" in out
    newest = max((p for p in store.probes(LOGS) if p.name == "host_call"), key=lambda p: p.created_utc)
    assert bind("{{ probes.host_call.run_id }}", ctx, Path("worklog.md")) == newest.run_id
    with pytest.raises(WorklogError, match=r"worklog.md:1: .*no probe named 'hots_call' \(have: .*host_call"):
        bind("{{ probes.hots_call.data }}", ctx, Path("worklog.md"))
    with pytest.raises(WorklogError, match=r"has no 'bench' \(have: 'benchmark', 'benchmark_bf16'\)"):
        bind("{{ probes.host_call.data.cases.bench }}", ctx, Path("worklog.md"))
    with pytest.raises(BindingError, match="not a list of numbers"):
        _ = ProbesFacts(store.probes(LOGS, "h100")).host_call.data.cases.median


def test_the_converted_probes_keep_what_is_known_and_leave_the_rest_unknown():
    by_id = {r.run_id: r for r in store.probes(LOGS)}
    host = by_id["20261123T1217Z_host_call"]
    assert host.code is not None and host.code.git_commit.startswith("5b9679d") and host.code.files == []
    assert host.device is None and host.tool == "tools/host_call_probe.py" and host.notes
    assert by_id["20261122T1810Z_cooling"].code is None and by_id["20261122T1810Z_cooling"].tool == ""


def test_a_probe_script_records_its_own_code_and_the_kernels_it_imported():
    """What ProbeSession records as a probe's code: the script, the CUDA sources it builds itself with
    their headers, and each module it imported from kernels/ with that module's closure."""
    tool = ROOT / "tools" / "copy_ceiling_probe.py"
    v16 = ROOT / "kernels" / "transform" / "v16_lean_call.py"
    modules = {"v16_lean_call": types.SimpleNamespace(__file__=str(v16)),
               "torch": types.SimpleNamespace(__file__="/usr/lib/python3/site-packages/torch/__init__.py"),
               "reporter.store": types.SimpleNamespace(__file__=str(ROOT / "reporter" / "store.py"))}
    files = tool_closure(tool, ROOT, [ROOT / "kernels" / "transform" / "probes.cu"], modules)
    rels = [p.relative_to(ROOT).as_posix() for p in files]
    assert rels[0] == "tools/copy_ceiling_probe.py" and rels[1] == "kernels/transform/probes.cu"
    assert "kernels/transform/v16_lean_call.py" in rels
    assert any(r.startswith("kernels/common/") for r in rels)  # the headers the sources include
    assert not any(r.startswith("reporter/") for r in rels) and len(rels) == len(set(rels))


def test_a_key_of_the_results_wins_over_a_helper_of_the_same_name():
    from reporter.analysis.facts import DataFacts

    d = DataFacts({"mean": 3.0, "count": 7, "x": [1.0, 2.0, 4.0]}, "data")
    assert (d.mean, d.count, d.x.mean, d.x.count, d.x.median) == (3.0, 7, 7 / 3, 3, 2.0)


def test_rows_of_one_contender_are_picked_and_their_field_averaged():
    from reporter.analysis.facts import BindingError, DataFacts

    rows = [{"contender": "a", "j": 2.0}, {"contender": "b", "j": 5.0}, {"contender": "a", "j": 4.0}]
    d = DataFacts({"rows": rows}, "data")
    assert d.rows.where("contender", "a").pluck("j").mean == 3.0
    assert d.rows.where("contender", "b").count == 1
    with pytest.raises(BindingError, match="no item whose 'contender' is 'c' \\(have: a, b\\)"):
        d.rows.where("contender", "c")
    with pytest.raises(BindingError, match="item 0 has no 'w'"):
        d.rows.pluck("w")
    with pytest.raises(BindingError, match="not a list of mappings"):
        d.rows.pluck("j").pluck("j")


@pytest.mark.parametrize("value,why", [(float("nan"), "records hold finite numbers only"),
                                       (b"bytes", "not a JSON value")])
def test_a_probe_record_holds_json_values_with_finite_numbers_only(value, why):
    from datetime import UTC, datetime

    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=why):
        ProbeRecord(run_id="20990101T000000000Z_x", name="x", created_utc=datetime.now(UTC), gpu="h100", tool="t",
                    data={"cases": {"a": [1.0, value]}})


def test_the_attention_stall_probe_maps_rows_to_versions_in_launch_order():
    """tools/attn_stall_probe.py reads ncu's raw CSV one kernel a version, in launch order (v24 and v25 build
    v15's kernel, so names cannot tell them apart): on the committed CSV it gives back the record's data,
    and a CSV with a kernel too many or too few is refused."""
    import gzip
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("attn_stall_probe", ROOT / "tools" / "attn_stall_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    stem = ROOT / "logs" / "devices" / "h100" / "probes" / "20261127T105859424Z_flashattn_psum_stalls"
    text = stem.with_name(stem.name + "_ncu_raw.csv").read_text()
    record = json.loads(gzip.decompress(stem.with_name(stem.name + ".json.gz").read_bytes()))
    versions = list(record["data"]["kernels"])
    assert versions == ["v16_launch_plan", "v24_packed_row_sums", "v25_sums_under_s"]
    assert probe.rows_by_version(text, versions) == record["data"]["kernels"]
    names = {k["kernel_name"] for k in record["data"]["kernels"].values()}
    assert names == {"attn_fwd_kv176_multicast"}  # one name for three versions: the order is the only key
    with pytest.raises(ValueError, match="one kernel a version"):
        probe.rows_by_version(text, versions[:2])


def test_the_energy_probe_alternates_its_contenders_and_sizes_the_product_by_the_case_s_flops():
    """tools/attn_energy_probe.py runs its windows in ABBA order, and its reference product has the case's
    tensor work: 2 N^3 = 4 B H S^2 D, N rounded to 128 (16384 for the benchmark, 8192 for test_medium);
    its committed record says which N it ran."""
    import gzip
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("attn_energy_probe", ROOT / "tools" / "attn_energy_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    assert probe.abba(["a", "b", "c"], 3) == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    case = {"batch_size": 4, "num_heads": 64, "seq_len": 8192, "head_dim": 128}
    for c in (case, {**case, "batch_size": 2, "seq_len": 4096}):
        n = probe.gemm_n(c)
        assert n % 128 == 0 and 2 * n**3 == 4 * c["batch_size"] * c["num_heads"] * c["seq_len"] ** 2 * c["head_dim"]
    assert probe.gemm_n(case) == 16384 and probe.gemm_n({**case, "batch_size": 2, "seq_len": 4096}) == 8192
    rec = json.loads(gzip.decompress((ROOT / "logs" / "devices" / "h100" / "probes" /
                                      "20261127T140811581Z_flashattn_energy_stale_max.json.gz").read_bytes()))
    assert rec["data"]["gemm_n"] == {"benchmark": 16384}
    order = [r["contender"] for r in rec["data"]["cases"]["benchmark"]]
    assert order == probe.abba(["v16_launch_plan", "v27_stale_max", "sdpa_cudnn", "gemm_same_flops"], 2)


def test_a_cross_check_figure_binds_in_ms_or_us_under_one_key():
    """crosscheck(...).course_mean and .do_bench_ms print in 'ms' or 'µs' under the key page 1 marks the
    same figure with; any other unit is refused with the binding's name."""
    from conftest import LOGS

    from reporter.analysis.facts import BindingError, CrossCheckFacts
    from reporter.analysis.summary import summarize
    from reporter.assignments import get_assignment

    s = summarize(get_assignment(ROOT / "kernels", "flashattn"), LOGS, "h100")
    check = s.crosschecks_of("v29_rows_dispatch")[-1]
    runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    c = CrossCheckFacts(check, runs, "v29.crosscheck")
    ms, us = c.course_mean("test_small"), c.course_mean("test_small", unit="µs")
    assert abs(float(us) - 1e3 * float(ms)) < 1e-9 and us.key == ms.key and (ms.unit, us.unit) == ("ms", "µs")
    assert c.do_bench_ms("test_small", "sdpa_cudnn", "µs").unit == "µs"
    with pytest.raises(BindingError, match="unit is 'ms' or 'µs'"):
        c.course_mean("test_small", unit="ns")

