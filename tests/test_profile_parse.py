"""The ncu CSV parser, units, failures, the metric list, and the profile subprocess (with a fake ncu).

Fixtures in tests/fixtures/ncu/:
* handwritten_v02_small.csv — written by hand in ncu's exact ``--csv --page raw`` layout
  (prelude lines, quoted header, units row with auto-scaled units, thousands separators,
  an 'n/a' cell, a C++ kernel name with commas); it pins the parser's behaviour;
* ncu_*_h100.csv / ncu_*_h200.csv — real output (ncu 2025.3.1.0) captured on each GPU (the matmul ones gzipped);
* failed_app_error.{stdout,stderr}.txt — a real ncu run whose target failed to import;
* gh100_metrics.txt.gz — ``ncu --query-metrics --chip gh100``, gzip-compressed (a megabyte of text).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import fixture_text

from reporter import ncu_metrics as N
from reporter.analysis import metrics as M
from reporter.harness.profile import (
    NcuOutputError,
    ProfileOptions,
    classify_failure,
    ncu_command,
    normalize_unit,
    parse_ncu_csv,
    parse_number,
    profile_from_output,
    profile_into_run,
    profile_version,
)
from reporter.records import Profile
from reporter.render.text import format_metric_block

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "ncu"
HANDWRITTEN = FIX / "handwritten_v02_small.csv"
REAL_CSVS = sorted([*FIX.glob("ncu_*.csv"), *FIX.glob("ncu_*.csv.gz")])  # the larger captures are kept gzipped



def _kernels(path: Path = HANDWRITTEN):
    return parse_ncu_csv(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the handwritten fixture


def test_handwritten_kernels_names_and_launch_shape():
    ks = _kernels()
    assert [k.index for k in ks] == [0, 1]
    assert ks[0].name.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,")
    assert ks[1].name == "attention_fwd_kernel"
    assert ks[1].grid == "(16, 64, 1)" and ks[1].block == "(128, 1, 1)"
    # launch columns are not metrics
    assert "Process ID" not in ks[1].metrics and "CC" not in ks[1].metrics


def test_handwritten_units_are_normalised_to_base():
    k = _kernels()[1].metrics
    assert k["gpu__time_duration.sum"].unit == "ns"
    assert k["gpu__time_duration.sum"].value == pytest.approx(118_620.0)
    assert k["dram__bytes_read.sum"].unit == "byte"  # '52,428.80' Kbyte: separators and a prefix
    assert k["dram__bytes_read.sum"].value == pytest.approx(52_428_800.0)
    assert k["l1tex__m_xbar2l1tex_read_bytes.sum"].value == pytest.approx(553_648_128.0)
    assert k["lts__t_bytes.sum"].value == pytest.approx(587.2e6)
    assert k["lts__t_sector_hit_rate.pct"].unit == "%" and k["lts__t_sector_hit_rate.pct"].value == pytest.approx(88.4)
    assert k["sm__ops_path_tensor_src_fp16.sum"].value == 34_359_738_368
    assert k["lts__cycles_elapsed.avg.per_second"].unit == "cycle/second"
    assert k["lts__cycles_elapsed.avg.per_second"].value == pytest.approx(1.76e9)
    assert k["dram__bytes.sum.peak_sustained"].unit == "byte/cycle"


def test_handwritten_missing_and_na_metrics_are_absent():
    k = _kernels()[1]
    assert "sm__ops_path_tensor_src_fp64.sum" not in k.metrics  # 'n/a' in the CSV
    assert "sm__ops_path_tensor_src_fp8.sum" not in k.metrics  # not a column at all
    assert M.value(k, "sm__ops_path_tensor_src_fp8.sum") is None
    assert M.total([k], "sm__ops_path_tensor_src_fp8.sum") is None


def test_profile_from_output_ok():
    p = profile_from_output(0, HANDWRITTEN.read_text(), "", tool_version="2025.3.1.0", command=["ncu", "x"])
    assert p.status == "ok" and p.tool == "ncu" and p.tool_version == "2025.3.1.0"
    assert len(p.kernels) == 2 and p.command == ["ncu", "x"]
    Profile.model_validate_json(p.model_dump_json())  # round-trips as a record


def test_handwritten_figures():
    ks = _kernels()
    f = M.figures(ks)
    assert f.duration_ns == pytest.approx(2_270 + 118_620)
    assert f.flops_by_class["tensor"] == pytest.approx(34_359_738_368)
    assert f.flops_by_class["fp32"] == pytest.approx(16_777_216 + 150_994_944 + 2 * 285_212_672)
    assert f.flops_by_class["fp16"] == 0 and f.flops_by_class["fp64"] == 0
    assert f.bytes_by_level["DRAM"] == pytest.approx(4.20e6 + 69.21e6)
    assert f.peak_gbps_by_level["DRAM"] == pytest.approx(1280 * 2.62)  # bytes/cycle × GHz = GB/s
    assert f.peak_gbps_by_level["L1"] == pytest.approx(16_896 * 1.755)  # median of the two kernels' clocks
    assert f.global_ld_sectors_per_request == pytest.approx(8.0)
    assert f.global_ld_ideal_sectors_per_request == pytest.approx(33.55e6 / 32 / 131_072)
    assert f.bank_conflicts_per_request == pytest.approx(524_288 / (3_145_728 + 1_048_576))
    assert 0.97 < f.tensor_share < 0.99


# --------------------------------------------------------------------------- format variations


_COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "dram__bytes_read.sum", "gpu__time_duration.sum"]
_HEADER = ",".join(f'"{c}"' for c in _COLUMNS)


def test_no_units_row_and_repeated_header_and_trailing_output():
    text = "\n".join([
        "some print from the application",
        "==PROF== Connected to process 1 (/usr/bin/python3)",
        _HEADER,
        '"0","1","python3","h","k0","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","1,024","2,000"',
        _HEADER,
        '"","","","","","","","","","","","byte","nsecond"',
        '"1","1","python3","h","k1","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","2048","3000"',
        "==PROF== Disconnected from process 1",
        "==WARNING== something after the table",
    ])
    ks = parse_ncu_csv(text)
    assert [k.name for k in ks] == ["k0", "k1"]
    assert ks[0].metrics["dram__bytes_read.sum"].value == 1024  # no units row before it: unscaled
    duration = ks[1].metrics["gpu__time_duration.sum"]
    assert duration.value == 3000 and duration.unit == "ns"


def test_nvtx_columns_with_embedded_quotes_are_not_metrics():
    nvtx_col = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    header = ",".join(f'"{c}"' for c in [*_COLUMNS[:4], nvtx_col, *_COLUMNS[4:]])
    cell = '"553  ""<default domain>:toy:none:none:RGB:0xff:REGISTERED:toy""  ""<default domain>:v01:none"" "'
    row = f'"0","1","p","h",{cell},"k, with a comma","1","7","(1, 1, 1)","(2, 1, 1)","0","9.0","1,536","2,048"'
    (k,) = parse_ncu_csv("\n".join([header, '"","","","","","","","","","","","","byte","ns"', row]))
    assert k.name == "k, with a comma" and k.grid == "(2, 1, 1)"
    assert set(k.metrics) == {"dram__bytes_read.sum", "gpu__time_duration.sum"}
    assert k.metrics["dram__bytes_read.sum"].value == 1536


def test_short_row_and_text_value():
    text = "\n".join([_HEADER, '"","","","","","","","","","","","Mbyte","msecond"',
                      '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","(!) weird"'])
    (k,) = parse_ncu_csv(text)
    assert k.metrics["dram__bytes_read.sum"].value == "(!) weird"  # non-numeric kept as text
    assert "gpu__time_duration.sum" not in k.metrics  # the row was short: missing, not zero


def test_no_table_raises_with_the_beginning_of_the_output():
    with pytest.raises(NcuOutputError, match="no ncu CSV header"):
        parse_ncu_csv("==PROF== Connected\n==ERROR== something\n")


@pytest.mark.parametrize("unit,factor,base", [
    ("nsecond", 1.0, "ns"), ("ns", 1.0, "ns"), ("usecond", 1e3, "ns"), ("msecond", 1e6, "ns"), ("second", 1e9, "ns"),
    ("byte", 1.0, "byte"), ("Kbyte", 1e3, "byte"), ("Mbyte", 1e6, "byte"), ("Gbyte", 1e9, "byte"),
    ("Tbyte/second", 1e12, "byte/second"), ("Gbyte/second", 1e9, "byte/second"), ("byte/usecond", 1e6, "byte/second"),
    ("cycle/nsecond", 1e9, "cycle/second"), ("cycle/usecond", 1e6, "cycle/second"), ("Ghz", 1e9, "cycle/second"),
    ("Mhz", 1e6, "cycle/second"), ("inst", 1.0, "inst"), ("Kinst", 1e3, "inst"), ("Msector", 1e6, "sector"),
    ("inst/cycle", 1.0, "inst/cycle"), ("byte/cycle", 1.0, "byte/cycle"), ("%", 1.0, "%"), ("", 1.0, ""),
    ("warp", 1.0, "warp"), ("register/thread", 1.0, "register/thread"),
])
def test_normalize_unit(unit, factor, base):
    f, b = normalize_unit(unit)
    assert f == pytest.approx(factor) and b == base


@pytest.mark.parametrize("raw,expected", [
    ("1,234,567", 1234567.0), ("1,234.5", 1234.5), ("0", 0.0), ("3.5e+03", 3500.0), ('"42"', 42.0),
    ("", None), ("n/a", None), ("N/A", None), ("-", None), ("abc", "abc"),
])
def test_parse_number(raw, expected):
    assert parse_number(raw) == expected


# --------------------------------------------------------------------------- real fixtures from the H100


@pytest.mark.parametrize("path", REAL_CSVS, ids=[p.name for p in REAL_CSVS])
def test_real_fixture_parses(path):
    text = fixture_text(path)
    try:
        ks = parse_ncu_csv(text)
    except NcuOutputError:
        prof = profile_from_output(1, text, "")
        assert prof.status in ("failed", "unavailable") and prof.reason
        pytest.skip(f"{path.name} holds no kernel table (a failed ncu run: {prof.reason})")
    assert ks, f"{path.name}: a table with no kernels"
    for k in ks:
        d = k.metrics.get("gpu__time_duration.sum")
        if d is not None:
            assert d.unit == "ns" and isinstance(d.value, float) and d.value > 0
        for name, m in k.metrics.items():
            assert "__" in name
            assert m.unit == "" or m.unit[0] not in "KMGT" or m.unit.endswith("hz"), f"{name}: unscaled unit {m.unit}"


def _real_captures(pattern: str) -> list[tuple]:
    """Every real capture matching the pattern (H100 and H200; kept plain or gzipped), parsed."""
    paths = sorted([*FIX.glob(pattern), *FIX.glob(pattern + ".gz")])
    if not paths:
        pytest.skip(f"no {pattern} captured yet")
    return [(p, fixture_text(p)) for p in paths]


def _each(pattern: str):
    for path, text in _real_captures(pattern):
        yield path, text, parse_ncu_csv(text)


def test_real_v02_small_is_one_kernel_reading_qkv_once():
    """flashattn v02 on test_small (1, 64, 1024, 128) fp16, one call selected by NVTX: one
    fused kernel whose DRAM reads are Q, K and V once (3 × 16.8 MB) within 10%."""
    for path, _, ks in _each("ncu_v02_small*.csv"):
        assert len(ks) == 1 and ks[0].name == "attention_fwd_kernel", path.name
        assert ks[0].grid == "(16, 64, 1)" and ks[0].block == "(128, 1, 1)"
        qkv_bytes = 3 * 64 * 1024 * 128 * 2
        assert M.value(ks[0], N.DRAM_READ) == pytest.approx(qkv_bytes, rel=0.10), path.name
        assert 10_000 < M.value(ks[0], N.DURATION) < 10_000_000  # ns: between 10 µs and 10 ms
        # DRAM at least the inputs; L2 and L1 see more (K and V re-read per Q block)
        f = M.figures(ks)
        assert f.bytes_by_level["L2"] > f.bytes_by_level["DRAM"] and f.bytes_by_level["L1"] > f.bytes_by_level["DRAM"]


def test_real_v02_small_keeps_only_requested_metrics_and_launch_stats():
    full_lists = 0
    for path, text, ks in _each("ncu_v02_small*.csv"):
        assert any(n.startswith("device__attribute_") for n in ks[0].metrics)  # ncu adds them unasked
        p = profile_from_output(0, text, "", requested=N.PROFILE_METRICS)
        names = set(p.kernels[0].metrics)
        assert names <= set(N.PROFILE_METRICS) | set(N.LAUNCH_METRICS)
        assert "launch__registers_per_thread" in names and N.DURATION in names
        block = format_metric_block(p)
        assert block.startswith("Kernel 0: attention_fwd_kernel\n  Duration            : ")
        assert block.splitlines()[1].endswith(" µs")
        requested = {m for _, m in N.CS149_BLOCK}
        if requested <= names:  # a capture with the full metric list: nothing in the block is missing
            assert "n/a" not in block, path.name
            full_lists += 1
    assert full_lists >= 1, "no capture made with the harness's full metric list (the H100 one is)"


def test_real_matmul_tensor_flops_within_2_percent():
    """fp16 4096³ torch.matmul under ``--metrics "regex:.*tensor.*"``: the tensor counter, times
    TENSOR_FLOPS_PER_OP, must give the 2·4096³ flops the product needs."""
    for path, _, ks in _each("ncu_matmul*.csv"):
        flops = M.executed_flops(ks).get("tensor")
        assert flops is not None, f"{path.name}: no sm__ops_path_tensor_src_*.sum column"
        expected = 2 * 4096**3
        assert flops == pytest.approx(expected, rel=0.02), f"{path.name}: tensor flops {flops:.4g} vs {expected:.4g}"
        # the warp-level instruction count is no substitute: its flops depend on the MMA shape
        assert M.total(ks, N.TENSOR_INST) not in (None, 0)


# --------------------------------------------------------------------------- failures


def test_real_failed_run_is_classified_with_the_exception():
    out = (FIX / "failed_app_error.stdout.txt").read_text()
    err = (FIX / "failed_app_error.stderr.txt").read_text()
    p = profile_from_output(1, out, err)
    assert p.status == "failed"
    assert "exit code 1" in p.reason and "ModuleNotFoundError: No module named 'pydantic'" in p.reason
    assert "\n" not in p.reason


@pytest.mark.parametrize("stdout,stderr,status,needle", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters",
     "", "unavailable", "ERR_NVGPUCTRPERM"),
    ("==ERROR== Failed to find metric sm__bogus.sum", "", "failed", "sm__bogus.sum"),
    ("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.", "", "failed", "NVTX"),
    ("==ERROR== Something unexpected happened", "", "failed", "Something unexpected happened"),
    ("", "Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory", "failed", "out of memory"),
    ("", "", "failed", "exited with code"),
])
def test_classify_failure(stdout, stderr, status, needle):
    s, reason = classify_failure(1, stdout, stderr)
    assert s == status and needle in reason and "\n" not in reason


def test_no_kernels_with_exit_zero_is_failed():
    p = profile_from_output(0, "==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n", "")
    assert p.status == "failed" and "no kernels" in p.reason


def test_timeout_is_failed():
    p = profile_from_output(-9, "", "", timed_out_after_s=60)
    assert p.status == "failed" and "60 s" in p.reason


# --------------------------------------------------------------------------- the metric list


@pytest.fixture(scope="module")
def catalog() -> dict[str, str]:
    return N.parse_query_metrics(fixture_text(FIX / "gh100_metrics.txt.gz"))


def test_every_requested_metric_exists_on_hopper(catalog):
    assert len(catalog) > 1000
    problems = [p for n in N.PROFILE_METRICS if (p := N.metric_problem(n, catalog))]
    assert problems == []


def test_requested_list_covers_the_block_and_the_roofline():
    names = set(N.PROFILE_METRICS)
    assert {m for _, m in N.CS149_BLOCK} <= names
    assert set(N.LEVEL_BYTES.values()) <= names and set(N.TENSOR_OPS.values()) <= names
    assert len(names) == len(N.PROFILE_METRICS)  # no duplicates


def test_metric_problem_catches_bad_names(catalog):
    assert N.metric_problem("dram__bytes.sum", catalog) is None
    assert N.metric_problem("lts__t_sector_hit_rate.pct", catalog) is None
    assert N.metric_problem("sm__throughput.avg.pct_of_peak_sustained_elapsed", catalog) is None
    assert "no metric" in N.metric_problem("l1tex__lsu_writeback_active_mem_lg.sum", catalog)  # pre-Hopper name
    assert N.metric_problem("lts__t_sector_hit_rate.sum", catalog)  # a ratio has no .sum
    assert N.metric_problem("dram__bytes", catalog)  # a counter needs a rollup
    assert N.metric_problem("dram__bytes.sum.bogus", catalog)


# --------------------------------------------------------------------------- the metric block


def test_format_metric_block():
    p = profile_from_output(0, HANDWRITTEN.read_text(), "")
    text = format_metric_block(p)
    assert "Kernel 1: attention_fwd_kernel" in text
    lines = {ln.split(":")[0].strip(): ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("  ")}
    assert list(lines)[:13] == [label for label, _ in N.CS149_BLOCK]
    block1 = text.split("Kernel 1:")[1]
    assert "Duration            : 118.62 µs" in block1
    assert "DRAM_Read           : 52.43 MB" in block1
    assert "L2_Cache_Hit_Rate   : 88.40 %" in block1
    assert "L2_to_L1_Traffic    : 553.65 MB" in block1


def test_format_metric_block_keeps_the_longest_kernels():
    p = profile_from_output(0, HANDWRITTEN.read_text(), "")
    text = format_metric_block(p, max_kernels=1)
    assert "Kernel 1: attention_fwd_kernel" in text and "Kernel 0:" not in text
    assert text.rstrip().endswith("… and 1 shorter kernels (all are in the record)")
    assert format_metric_block(p, max_kernels=5) == format_metric_block(p)


def test_format_metric_block_without_profile():
    assert "No profile" in format_metric_block(None)
    assert "unavailable: no ncu" in format_metric_block(Profile(status="unavailable", reason="no ncu"))
    p = Profile(status="ok", kernels=[])
    assert "no kernels" in format_metric_block(p)


@pytest.mark.parametrize("v,unit,shown", [
    (850.0, "ns", "850 ns"), (118_620.0, "ns", "118.62 µs"), (23_139_071.0, "ns", "23.139 ms"),
    (512.0, "byte", "512 B"), (12_290.0, "byte", "12.29 KB"), (1.61e9, "byte", "1.61 GB"), (45.123, "%", "45.12 %"),
    (3.0e12, "byte/second", "3,000.0 GB/s"), (1_048_576.0, "sector", "1,048,576 sector"),
])
def test_format_value(v, unit, shown):
    assert M.format_value(v, unit) == shown


# --------------------------------------------------------------------------- the subprocess, with a fake ncu


def _fake_ncu(tmp_path: Path, body: str) -> str:
    script = tmp_path / "ncu"
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.fixture()
def flashattn():
    from reporter.assignments import get_assignment

    a = get_assignment(ROOT / "kernels", "flashattn")
    return a, a.version("v02")


def test_ncu_command_selects_the_profile_range(flashattn):
    a, v = flashattn
    cmd = ncu_command("ncu", assignment=a.name, version=v.name, version_short=v.short, case="test_small", root=ROOT)
    assert cmd[cmd.index("--nvtx-include") + 1] == "flashattn/v02/profile/"
    assert "--nvtx" in cmd and cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--page") + 1] == "raw" and "--csv" in cmd
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(N.PROFILE_METRICS)
    tail = cmd[cmd.index(sys.executable):]
    assert tail == [sys.executable, "-m", "reporter.harness.profile_target", "flashattn", v.name, "test_small",
                    "--root", str(ROOT)]


def test_profile_version_with_a_fake_ncu(tmp_path, flashattn):
    a, v = flashattn
    ncu = _fake_ncu(tmp_path, f"""
        if [ "$1" = "--version" ]; then
            echo "NVIDIA (R) Nsight Compute Command Line Profiler"
            echo "Version 2025.3.1.0 (build 1) (public-release)"
            exit 0
        fi
        cat "{HANDWRITTEN}"
        echo "a print of the target on stderr" >&2
    """)
    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=ncu, timeout_s=30))
    assert p.status == "ok", p.reason
    assert p.tool_version == "2025.3.1.0" and len(p.kernels) == 2
    assert p.command[0] == ncu and "flashattn/v02/profile/" in p.command


def test_profile_version_without_permission(tmp_path, flashattn):
    a, v = flashattn
    ncu = _fake_ncu(tmp_path, """
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance" \
             "Counters on the target device 0."
        exit 1
    """)
    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=ncu, timeout_s=30))
    assert p.status == "unavailable" and "ERR_NVGPUCTRPERM" in p.reason


def test_profile_version_timeout(tmp_path, flashattn):
    a, v = flashattn
    ncu = _fake_ncu(tmp_path, """
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        sleep 20
    """)
    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=ncu, timeout_s=0.5))
    assert p.status == "failed" and "did not finish" in p.reason


def test_profile_version_without_ncu(monkeypatch, flashattn):
    import reporter.harness.profile as prof

    a, v = flashattn
    monkeypatch.setattr(prof, "find_ncu", lambda: None)
    p = profile_version(ROOT, a, v, "test_small")
    assert p.status == "unavailable" and "not found" in p.reason


def test_find_ncu_honours_the_environment(monkeypatch, tmp_path):
    import reporter.harness.profile as prof

    fake = _fake_ncu(tmp_path, "exit 0\n")
    monkeypatch.setenv(prof.NCU_ENV, fake)
    assert prof.find_ncu() == fake
    monkeypatch.setenv(prof.NCU_ENV, str(tmp_path / "missing"))
    assert prof.find_ncu() is None


def test_profile_into_run_attaches_the_profile_and_the_cli_prints_it(tmp_path, flashattn):
    """The harness attaches the profile and prints nothing; the CLI's terminal events print the
    metric block and how ncu's duration agrees with the run's timing (analysis, from the record)."""
    from rich.console import Console

    from reporter import store
    from reporter.render.text import TerminalEvents

    a, v = flashattn
    run = store.load(ROOT / "logs/flashattn/v02_fused_triton/20261122T014907188Z_h100_test_small.json.gz")
    ncu = _fake_ncu(tmp_path, f"""
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        cat "{HANDWRITTEN}"
    """)
    console = Console(record=True, width=120)
    prof = profile_into_run(run, ROOT, a, v, options=ProfileOptions(ncu=ncu, timeout_s=30),
                            events=TerminalEvents(console))
    assert run.profile is prof and prof.status == "ok"
    assert "Kernel 1:" not in console.export_text(clear=False)  # the harness formats no result
    TerminalEvents(console).profiled(run)
    shown = console.export_text()
    assert "profile v02_fused_triton · test_small: 2 kernel(s) profiled" in shown
    assert "harness median" in shown  # the cross-check sentence, computed from the record
    assert "Kernel 1: attention_fwd_kernel" in shown and "L2_to_SHMEM_Traffic : 536.87 MB" in shown
    reloaded = type(run).model_validate_json(run.model_dump_json())
    assert reloaded.profile is not None and len(reloaded.profile.kernels) == 2


# --------------------------------------------------------------------------- the profiled process


def _toy_assignment(root: Path, extra: str = "") -> Path:
    """kernels/toy/assignment.py under ``root``: one tiny case, the identity as reference, plus
    ``extra`` (peers, say); a CPU-only stand-in for a GPU assignment."""
    folder = root / "kernels" / "toy"
    folder.mkdir(parents=True)
    (folder / "assignment.py").write_text(textwrap.dedent("""
        from reporter.assignments import Tolerance
        from reporter.records import WorkModel
        CASES = {"tiny": {"n": 3, "seed": 1}}
        TOLERANCE = Tolerance()
        def generate_input(n, seed):
            return list(range(n))
        def ref_kernel(data):
            return data
        def work_model(n, seed=1):
            return WorkModel(flops=0, bytes=n, ceiling="copy")
    """) + textwrap.dedent(extra))
    return folder


def test_profile_target_runs_warm_then_inside_the_range(tmp_path, monkeypatch):
    """A CPU-only assignment stands in for a GPU one: the target loads it, calls the version
    once outside and once inside <assignment>/<vNN>/profile, and prints nothing on stdout."""
    import reporter.harness.profile_target as target

    folder = _toy_assignment(tmp_path)
    log = tmp_path / "calls.txt"
    (folder / "v01_toy.py").write_text(textwrap.dedent(f"""
        def custom_kernel(data):
            import reporter.harness.nvtx_ranges as r
            with open({str(log)!r}, "a") as f:
                f.write("call\\n")
            print("noise on stdout")
            return data
    """))
    pushed: list[str] = []
    monkeypatch.setattr(target, "_sync", lambda: None)
    monkeypatch.setattr("reporter.harness.nvtx_ranges._PUSH", pushed.append)
    monkeypatch.setattr("reporter.harness.nvtx_ranges._POP", lambda: None)
    real_stdout = sys.stdout
    try:
        assert target.main(["toy", "v01", "tiny", "--root", str(tmp_path)]) == 0
    finally:
        sys.stdout = real_stdout
    assert log.read_text().splitlines() == ["call", "call"]
    assert pushed == ["toy", "v01", "profile"]


def test_profile_target_profiles_a_peer_by_name(tmp_path, monkeypatch, capsys):
    """--peer: the second argument names one of PEERS, profiled inside <assignment>/<peer>/profile;
    an unknown peer is a clear error listing the ones there are."""
    import reporter.harness.profile_target as target

    log = tmp_path / "calls.txt"
    folder = _toy_assignment(tmp_path, f"""
        from reporter.assignments import Peer
        def _lib(data):
            with open({str(log)!r}, "a") as f:
                f.write("lib\\n")
            return data
        PEERS = {{"lib": Peer(_lib, "a library")}}
    """)
    (folder / "v01_toy.py").write_text("def custom_kernel(data):\n    return data\n")
    pushed: list[str] = []
    monkeypatch.setattr(target, "_sync", lambda: None)
    monkeypatch.setattr("reporter.harness.nvtx_ranges._PUSH", pushed.append)
    monkeypatch.setattr("reporter.harness.nvtx_ranges._POP", lambda: None)
    real_stdout = sys.stdout
    try:
        assert target.main(["toy", "lib", "tiny", "--peer", "--root", str(tmp_path)]) == 0
        assert target.main(["toy", "nope", "tiny", "--peer", "--root", str(tmp_path)]) == 2
    finally:
        sys.stdout = real_stdout
    assert log.read_text().splitlines() == ["lib", "lib"]
    assert pushed == ["toy", "lib", "profile"]
    assert "no peer 'nope' (peers: lib)" in capsys.readouterr().err


def test_profile_target_reports_a_bad_version(tmp_path, capsys):
    import reporter.harness.profile_target as target

    real_stdout = sys.stdout
    try:
        assert target.main(["flashattn", "v99", "test_small", "--root", str(ROOT)]) == 2
    finally:
        sys.stdout = real_stdout
    assert "no version 'v99'" in capsys.readouterr().err


# assignments named after an operation the reporter speaks of in its own right: the measured ceilings are
# 'matmul_<dtype>' ("the measured fp16 matmul ceiling") whether or not an assignment is called matmul
OPERATION_WORDS = {"matmul"}


def test_nothing_in_reporter_names_an_assignment():
    names = [p.name for p in (ROOT / "kernels").iterdir() if (p / "assignment.py").is_file()]
    mine = ["harness/profile.py", "harness/profile_target.py", "analysis/metrics.py", "analysis/diagnose.py",
            "analysis/hroofline.py", "render/profile_charts.py"]
    for rel in mine:
        text = (ROOT / "reporter" / rel).read_text()
        for n in names:  # the name as a word of its own ('transform', not matplotlib's ax.transData.transform())
            if n in OPERATION_WORDS:  # the word names the operation too: only the assignment's name as a string or path
                pattern = rf"""(["']{re.escape(n)}["']|(?<![\w.]){re.escape(n)}/)"""
            else:
                pattern = rf"(?<![\w.]){re.escape(n)}(?![\w=(])"
            assert not re.search(pattern, text), f"reporter/{rel} names the assignment '{n}'"
    assert os.sep not in "".join(names)


def test_profile_version_inside_a_live_progress(tmp_path, flashattn):
    """Inside `report run`'s progress bars the profiler shows as a task (a second live display
    would raise), updated per profiled kernel and removed when done."""
    from rich.console import Console
    from rich.progress import Progress

    a, v = flashattn
    ncu = _fake_ncu(tmp_path, f"""
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        cat "{HANDWRITTEN}"
    """)
    seen: list[str] = []
    with open(os.devnull, "w") as sink, Progress(console=Console(file=sink)) as progress:
        real_update = progress.update

        def spy(task, **kw):
            if "description" in kw:
                seen.append(kw["description"])
            return real_update(task, **kw)

        progress.update = spy  # type: ignore[method-assign]
        p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=ncu, timeout_s=30),
                            progress=progress)
        assert p.status == "ok" and progress.tasks == []
    assert seen[-1] == "ncu v02 · test_small: profiled 2 kernel(s), last attention_fwd_kernel"


def test_report_run_has_a_profile_option():
    from typer.testing import CliRunner

    from reporter.cli import app
    from reporter.harness.jobs import RunOptions

    result = CliRunner().invoke(app, ["run", "--help"])
    assert result.exit_code == 0 and "--profile" in result.output
    assert RunOptions().profile is False and RunOptions(profile=True).profile


# --------------------------------------------------------------------------- the report file (.ncu-rep)

# A stand-in for NVIDIA's ncu_report module with the calls reporter.harness.profile makes (load_report,
# ranges, actions, metric names, kinds, values, units); the real module is exercised on the GPU
# (tests/test_profile_gpu.py compares what it reads with ncu's own CSV of the same file).
FAKE_NCU_REPORT = '''
class IMetric:
    ValueKind_STRING, ValueKind_DOUBLE, ValueKind_UINT64 = 1, 2, 3

class IAction:
    NameBase_DEMANGLED = 7

class _Metric:
    def __init__(self, kind, value, unit):
        self._k, self._v, self._u = kind, value, unit
    def kind(self): return self._k
    def as_string(self): return str(self._v)
    def as_double(self): return float(self._v)
    def as_uint64(self): return int(self._v)
    def unit(self): return self._u

class _Action:
    def __init__(self, name, metrics): self._n, self._m = name, metrics
    def name(self, base=None): return self._n + ("(demangled)" if base == IAction.NameBase_DEMANGLED else "")
    def metric_names(self): return set(self._m)
    def metric_by_name(self, n): return self._m.get(n)

class _Range:
    def __init__(self, actions): self._a = actions
    def num_actions(self): return len(self._a)
    def action_by_idx(self, i): return self._a[i]

class _Context:
    def __init__(self, ranges): self._r = ranges
    def num_ranges(self): return len(self._r)
    def range_by_idx(self, i): return self._r[i]

def load_report(path):
    assert open(path).read() == "report"
    M = _Metric
    metrics = {
        "gpu__time_duration.sum": M(IMetric.ValueKind_DOUBLE, 83.5, "usecond"),
        "dram__bytes_read.sum": M(IMetric.ValueKind_UINT64, 123456789012345, "byte"),
        "launch__grid_dim_x": M(IMetric.ValueKind_UINT64, 132, ""),
        "launch__grid_dim_y": M(IMetric.ValueKind_UINT64, 1, ""),
        "launch__grid_dim_z": M(IMetric.ValueKind_UINT64, 1, ""),
        "launch__block_dim_x": M(IMetric.ValueKind_UINT64, 384, ""),
        "launch__block_dim_y": M(IMetric.ValueKind_UINT64, 1, ""),
        "launch__block_dim_z": M(IMetric.ValueKind_UINT64, 1, ""),
        "device__attribute_display_name": M(IMetric.ValueKind_STRING, "NVIDIA H100", ""),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": M(IMetric.ValueKind_DOUBLE, 61.25, "%"),
    }
    return _Context([_Range([_Action("attn_fwd", metrics)])])
'''


def _fake_install(tmp_path: Path, with_module: bool, ncu_body: str) -> str:
    """An Nsight Compute install: <root>/nsight-compute-2025.3/{ncu, extras/python/ncu_report.py} and
    CUDA's wrapper <root>/bin/ncu, which is what find_ncu() usually returns."""
    install = tmp_path / "nsight-compute-2025.3"
    install.mkdir()
    real = Path(_fake_ncu(install, ncu_body))
    if with_module:
        (install / "extras" / "python").mkdir(parents=True)
        (install / "extras" / "python" / "ncu_report.py").write_text(FAKE_NCU_REPORT)
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "ncu"
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def _report_file(tmp_path: Path) -> Path:
    """A stand-in .ncu-rep; the fake module and the fake ncu only look at its name and content."""
    rep = tmp_path / "p.ncu-rep"
    rep.write_text("report")
    return rep


def test_ncu_command_exports_a_report_when_asked(flashattn, tmp_path):
    a, v = flashattn
    plain = ncu_command("ncu", assignment=a.name, version=v.name, version_short=v.short, case="c", root=ROOT)
    assert "--export" not in plain
    cmd = ncu_command("ncu", assignment=a.name, version=v.name, version_short=v.short, case="c", root=ROOT,
                      export=tmp_path / "p.ncu-rep")
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "p.ncu-rep") and "--force-overwrite" in cmd


def test_the_report_module_is_found_in_the_install_ncu_belongs_to(tmp_path):
    from reporter.harness.profile import ncu_report_dir

    wrapper = _fake_install(tmp_path, True, "exit 0\n")
    assert ncu_report_dir(wrapper) == tmp_path / "nsight-compute-2025.3" / "extras" / "python"
    assert ncu_report_dir(str(tmp_path / "nsight-compute-2025.3" / "ncu")) == ncu_report_dir(wrapper)
    other = tmp_path / "elsewhere" / "bin"  # an ncu with no install beside it
    other.mkdir(parents=True)
    lone = _fake_ncu(other, "exit 0\n")
    assert ncu_report_dir(lone) is None
    # CUDA's wrapper script with the installs under /opt/nvidia/nsight-compute/<version>/: the one
    # ncu --version names, not merely the newest
    roots = tmp_path / "opt"
    for ver in ("2025.3.1", "2025.4.0"):
        (roots / ver / "extras" / "python").mkdir(parents=True)
        (roots / ver / "extras" / "python" / "ncu_report.py").write_text("")
    assert ncu_report_dir(lone, "2025.3.1.0", roots=[roots]) == roots / "2025.3.1" / "extras" / "python"
    assert ncu_report_dir(lone, "2024.1.0.0", roots=[roots]) is None


def test_the_report_is_read_with_ncu_report_where_the_install_ships_it(tmp_path):
    from reporter.harness.profile import read_report

    wrapper = _fake_install(tmp_path, True, "exit 3\n")  # the CSV import would fail: the module must read it
    rep = _report_file(tmp_path)
    (k,), how = read_report(rep, wrapper)
    assert how == "ncu_report"
    assert k.name == "attn_fwd(demangled)" and k.grid == "(132, 1, 1)" and k.block == "(384, 1, 1)"
    assert k.metrics["gpu__time_duration.sum"].value == pytest.approx(83_500) and \
        k.metrics["gpu__time_duration.sum"].unit == "ns"  # base units, as the CSV path stores them
    assert k.metrics["dram__bytes_read.sum"].value == 123456789012345  # every digit of an integer
    assert k.metrics["device__attribute_display_name"].value == "NVIDIA H100"
    assert k.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"].unit == "%"
    (k2,), _ = read_report(rep, wrapper, wanted={"gpu__time_duration.sum"})
    assert set(k2.metrics) == {"gpu__time_duration.sum"}


def test_without_the_module_ncu_import_reads_the_report_as_csv(tmp_path):
    from reporter.harness.profile import read_report

    wrapper = _fake_install(tmp_path, False, f"""
        [ "$1" = "--import" ] && [ -f "$2" ] && cat "{HANDWRITTEN}" && exit 0
        exit 5
    """)
    rep = _report_file(tmp_path)
    kernels, how = read_report(rep, wrapper)
    assert how == "ncu --import csv" and kernels == _kernels()


def test_a_module_that_crashes_its_process_costs_only_the_reader(tmp_path):
    """The native module segfaulted in a process with torch loaded on the H100 node: it is read in
    a child, whose death sends the file to the CSV import and leaves this process running."""
    from reporter.harness.profile import read_report

    wrapper = _fake_install(tmp_path, True, f'[ "$1" = "--import" ] && cat "{HANDWRITTEN}"\n')
    (tmp_path / "nsight-compute-2025.3" / "extras" / "python" / "ncu_report.py").write_text(
        "import os, signal\ndef load_report(path):\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    rep = _report_file(tmp_path)
    kernels, how = read_report(rep, wrapper)
    assert how == "ncu --import csv" and len(kernels) == 2


def test_a_module_that_fails_to_load_falls_back_to_the_csv(tmp_path):
    from reporter.harness.profile import read_report

    wrapper = _fake_install(tmp_path, True, f'[ "$1" = "--import" ] && cat "{HANDWRITTEN}"\n')
    (tmp_path / "nsight-compute-2025.3" / "extras" / "python" / "ncu_report.py").write_text(
        "raise ImportError('libgcc_s.so.1: cannot open shared object file')\n")
    rep = _report_file(tmp_path)
    kernels, how = read_report(rep, wrapper)
    assert how == "ncu --import csv" and len(kernels) == 2


def test_a_profile_keeps_its_report_beside_the_record(tmp_path, flashattn):
    """ncu writes the file named after --export; the profile reads it, and the file is kept where
    asked, under the name the record gives."""
    a, v = flashattn
    wrapper = _fake_install(tmp_path, False, f"""
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        if [ "$1" = "--import" ]; then cat "{HANDWRITTEN}"; exit 0; fi
        while [ $# -gt 0 ]; do
            if [ "$1" = "--export" ]; then printf report > "$2"; fi
            shift
        done
        echo "==PROF== Report: written"
    """)
    import gzip

    keep = tmp_path / "logs" / "flashattn" / "v02_fused_triton" / "20261122T000000Z_h100_test_small.ncu-rep.gz"
    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=wrapper, timeout_s=30, keep_report=keep))
    assert p.status == "ok", p.reason
    assert p.read_with == "ncu --import csv" and len(p.kernels) == 2
    assert gzip.decompress(keep.read_bytes()) == b"report" and p.report_file == keep.name
    assert [f.name for f in keep.parent.iterdir()] == [keep.name]  # no partial file left

    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=wrapper, timeout_s=30))
    assert p.status == "ok" and p.report_file is None  # not kept: nothing written anywhere


def test_a_profile_without_a_report_file_reads_the_printed_csv(tmp_path, flashattn):
    a, v = flashattn
    ncu = _fake_ncu(tmp_path, f'cat "{HANDWRITTEN}"\n')
    p = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(ncu=ncu, timeout_s=30,
                                                                         keep_report=tmp_path / "k.ncu-rep"))
    assert p.status == "ok" and p.read_with == "ncu stdout csv" and p.report_file is None
    assert not (tmp_path / "k.ncu-rep").exists()
