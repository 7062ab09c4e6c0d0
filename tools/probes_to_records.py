"""One-time conversion (25 Nov 2026) of the probe outputs under logs/devices/h100/probes/ into probe records.

    python tools/probes_to_records.py            # converts, then removes the README it replaces
    python tools/probes_to_records.py --check    # says what it would write, writes nothing

Until 25 Nov 2026 a probe script wrote its own JSON (no schema, no device block, no code hash)
and the folder's README said, in prose, what each file was, which script and commit made it and
what it measured. Each of those outputs becomes a :class:`reporter.records.ProbeRecord` with that
information as fields: the script's JSON becomes the record's ``data`` (unchanged: the test
``tests/test_probes.py`` compares it with the file at the commit before the conversion), the files
the same session wrote beside it become its ``attachments``, the README's entry its
``description``, and the commit the README named its ``code.git_commit``. What those outputs never
kept is left unknown, not guessed: the device block (only the GPU's name where the output gave it)
and the code closure (the scripts' texts were not recorded; a commit is named only where the
README named one). A record whose stem is the output's keeps the output's path, so the worklogs'
citations stay valid. Probes made since write records themselves (:mod:`reporter.harness.probe`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reporter import store  # noqa: E402
from reporter.records import CodeSnapshot, ProbeRecord  # noqa: E402

FOLDER = ROOT / "logs" / "devices" / "h100" / "probes"
NOTE = ("converted on 2026-11-25 from the script's own output (tools/probes_to_records.py): probes did not record "
        "their device block or code closure then; the commit, where given, is the one named when the output was "
        "committed, and whether the tree differed from it is unknown")

# stem of the record -> (tool, command, commit or None, attachments, description)
PROBES: dict[str, tuple[str, str, str | None, list[str], str]] = {
    "20261122T1740Z_course_timers_and_series": (
        "", "", None, ["20261122T1740Z_course_harness_output.txt"],
        "The course's eval.py (test and benchmark) on exports of flashattn v15, v16 and histogram v07 and on cuDNN "
        "submitted through a shim; do_bench and CUDA-graph medians per case; then back-to-back calls of v16 for 10 s, "
        "cuDNN for 8 s and v16 for 5 s with the SM clock and power per call (series: seconds since start, ms, MHz, W). "
        "The script that ran it was not kept; the .txt is the harness's output."),
    "20261122T1810Z_cooling": (
        "", "", None, [],
        "8 s of back-to-back v16 calls, then a rest of 0, 2, 5, 10 and 2 s (temperature °C, SM MHz and W every "
        "0.25 s), then 40 timed calls; and 20 s of idle cooling. The script that ran it was not kept."),
    "20261122T1953Z_ncu_test_small": (
        "reporter/harness/profile_target.py", "python -m reporter.harness.profile_target flashattn sdpa_cudnn "
        "test_small --peer (under ncu --clock-control none); the same for flashattn v17 and v18", None,
        ["20261122T1953Z_ncu_test_small_sdpa_cudnn.csv", "20261122T1953Z_ncu_test_small_v17.csv",
         "20261122T1953Z_ncu_test_small_v18.csv"],
        "Nsight Compute (launch statistics, speed of light, occupancy, tensor-pipe activity; --clock-control none) of "
        "one test_small call of cuDNN's SDPA, flashattn v17 and v18: cuDNN's kernel is persistent (132 CTAs of 384 "
        "threads, no cluster, 227 KB of shared memory). The CSVs are ncu's output."),
    "20261122T2013Z_trace_small": (
        "tools/trace_probe.py", "python tools/trace_probe.py --case test_small --reps 6", None,
        ["20261122T2013Z_trace_small.json.gz", "20261122T2013Z_trace_small.txt"],
        "v18 with PREFETCH 0 (v17's kernel), v19, v20 and v21 built with TRACE=1: every CTA's timeline per work unit "
        "(raw stamps and the reduction in the .json.gz; the .txt is the table the script printed)."),
    "20261123T0353Z_transform_probe": (
        "tools/transform_probe.py", "python tools/transform_probe.py OUT.json", None, [],
        "transform's benchmark case (128M fp32): the memcpy peer, v02, v03 and v04, each after a 3 s rest, 200 calls "
        "back to back timed one by one with CUDA events and no L2 flush (per_call_ms), then triton.testing.do_bench "
        "(which clears the L2 before each call). Back to back without a flush every kernel is slower than with one "
        "(the previous call's y is still being written back from the L2)."),
    "20261123T0408Z_transform_probe": (
        "tools/transform_probe.py", "python tools/transform_probe.py OUT.json", None, [],
        "The same script timing through the harness's loop (reporter.harness.timing.benchmark, 3 s rest, no flush, "
        "no warm-up) instead of its own events, then do_bench."),
    "20261123T0417Z_ncu_transform_benchmark": (
        "reporter/harness/profile_target.py", "python -m reporter.harness.profile_target transform v03 benchmark "
        "(under ncu --clock-control none --nvtx-include \"transform/v03/profile/\"); the same for v02 and the "
        "memcpy peer (--peer)", None,
        ["20261123T0417Z_ncu_transform_benchmark_v02.csv", "20261123T0417Z_ncu_transform_benchmark_v03.csv",
         "20261123T0417Z_ncu_transform_benchmark_memcpy.txt"],
        "Nsight Compute (speed of light, memory workload, launch statistics, occupancy, warp state) of one benchmark "
        "call of transform's v02 and v03: the main kernel and transform_sum_partials. The memcpy peer gave no kernel "
        "in its range (the .txt is ncu's output): the device-to-device copy did not run as a kernel there."),
    "20261123T0443Z_copy_ceiling_probe": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json", "d6ff1d7", [],
        "The memcpy peer against SM kernels that only copy (a 16-byte grid-stride copy; the bulk-copy ring of "
        "transform v07 without its arithmetic, three configurations) and against transform v03, v06 and v07, on the "
        "fp32 and bf16 benchmark arrays, each through the harness's timing loop (3 s rest, 3 warm-up calls, 100 calls "
        "after the L2 flush) and with do_bench."),
    "20261123T0450Z_copy_ceiling_variants": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json variants", "dd08858", [],
        "On the fp32 array, the 16-byte copy with 4 loads in flight per thread, and the bulk ring with 4 KB to 64 KB "
        "tiles, 1 to 8 blocks per SM, contiguous runs of tiles per block, and the evict-first L2 policy."),
    "20261123T0507Z_copy_ceiling_probe": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json", "8d6a1cc", [],
        "The same comparison as the 04:43 probe with transform v08 added, and do_bench's cross-check of its figures "
        "(on a different machine from the 04:43 and 04:50 probes). The copy kernels moved from tools/copy_ceiling.cu "
        "to kernels/transform/probes.cu at 05:10 UTC, unchanged, when they became transform's PROBES."),
    "20261123T0543Z_copy_ceiling_probe": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json", "4179b70", [],
        "The same comparison with transform v10 added, after `report crosscheck transform v10 --no-course` in the "
        "same session; do_bench of v10 on the bf16 array, which the cross-check (fp32 benchmark case only) does not "
        "cover."),
    "20261123T0644Z_copy_ceiling_hints": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json hints", "74b9b53", [],
        "On the fp32 array, the 16-byte copy with non-coherent, no-L1-allocation, 256-byte-L2-prefetch loads "
        "(copy_vec4_nc, 1 to 4 loads in flight per thread) and the bulk ring with tiles prefetched into L2 ahead of "
        "the ring (PREFETCH 4 or 8 tiles)."),
    "20261123T0745Z_isolation_broken_and_versions": (
        "tools/isolation_check.sh", "tools/isolation_check.sh 1", "207e820",
        ["20261123T0745Z_isolation_broken_and_versions.log"],
        "tests/test_gpu_broken.py (every broken version of tests/fixtures/broken_project through `report run` and "
        "`report sweep` in worker processes, and the poisoning of cached and fresh memory) and "
        "tests/test_gpu_versions.py (every committed version on its test cases with the dtype check and the "
        "poisoning); the .log is the session's output."),
    "20261123T0748Z_isolation_aba_and_quick_runs": (
        "tools/isolation_check.sh", "tools/isolation_check.sh 2", "977aa5b",
        ["20261123T0748Z_isolation_aba_and_quick_runs.log"],
        "transform v10 on benchmark, --hold, timed in a worker, in-process (--no-isolate) and in a worker again, the "
        "terminal output of `report run broken` as a person sees it, a quick flashattn v15 run with its peers and a "
        "quick --interleave histogram run through the worker; the .log is the session's output."),
    "20261123T0840Z_v12_compile_failure_session": (
        "", "report run transform -v v10 -v v12 -c benchmark_bf16 -c benchmark --interleave --probes", "4d6ddf5",
        ["20261123T0840Z_v12_compile_failure_session.log", "20261123T0840Z_interleaved_v10_benchmark_bf16_record.json",
         "20261123T0840Z_interleaved_v10_benchmark_record.json"],
        "v12 did not compile under the harness's -DSTAGES=2 (a template parameter of transform_ring.cuh was named "
        "STAGES). v10's two run records of that session are kept here, not under logs/transform, because they are "
        "not a figure of v10: interleaved with the torch eager peer, v10's call took the host longer to queue than "
        "the L2 flush keeps the GPU busy, and its samples measure the host."),
    "20261123T0937Z_copy_ceiling_order": (
        "tools/copy_ceiling_probe.py", "python tools/copy_ceiling_probe.py OUT.json order", "dfb26d0", [],
        "The bulk ring with its tiles dealt in advance (v07's order) beside the same ring with the tiles handed out "
        "in order by an atomic counter (copy_bulk_dyn), both dtypes, memcpy first and last. This tool launches "
        "through CudaKernel.__call__ (arguments converted on every call), whose host time the flush does not cover."),
    "20261123T1217Z_host_call": (
        "tools/host_call_probe.py", "python tools/host_call_probe.py OUT.json", "5b9679d", [],
        "The host's time to queue one call (from the start event's record to the end event's) of the memcpy peer, "
        "transform v15, v16 and the pieces of a call, 400 interleaved rounds in the harness's loop with its flush, "
        "both benchmark arrays."),
}


def _commit(short: str | None) -> str | None:
    if short is None:
        return None
    out = subprocess.run(["git", "rev-parse", short], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def record(stem: str) -> ProbeRecord:
    tool, command, commit, attachments, description = PROBES[stem]
    stamp, name = stem.split("_", 1)
    source = FOLDER / f"{stem}.json"
    data = json.loads(source.read_text()) if source.is_file() else {}
    if "schema_version" in data:
        raise SystemExit(f"{source}: already a record")
    for a in attachments:
        if not (FOLDER / a).is_file():
            raise SystemExit(f"{FOLDER / a}: missing")
    return ProbeRecord(run_id=stem, name=name, created_utc=datetime.strptime(stamp, "%Y%m%dT%H%MZ").replace(tzinfo=UTC),
                       gpu="h100", device=None, tool=tool, command=command,
                       code=CodeSnapshot(files=[], git_commit=_commit(commit), git_dirty=None) if commit else None,
                       description=description, data=data, attachments=attachments, notes=[NOTE])


def main() -> int:
    check = "--check" in sys.argv[1:]
    records = [record(stem) for stem in PROBES]
    covered = {f"{r.run_id}.json" for r in records} | {a for r in records for a in r.attachments} | {"README.md"}
    stray = sorted(p.name for p in FOLDER.iterdir() if p.name not in covered)
    if stray:
        raise SystemExit(f"files in {FOLDER} no probe claims: {', '.join(stray)}")
    for r in records:
        path = store.probe_path(ROOT / "logs", r)
        print(f"{'would write' if check else 'writing'} {path.relative_to(ROOT)} ({len(r.attachments)} attachments)")
        if not check:
            store.save(r, path, logs=ROOT / "logs")
    if not check:
        (FOLDER / "README.md").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
