"""Print one line per run record written since a given UTC stamp: version, case, timing method,
median and spread, the host's queuing time, and the GPU state NVML saw (for device sessions).

    python3 tools/session_table.py logs 20261122T000000Z
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporter import store  # noqa: E402
from reporter.records import Run  # noqa: E402


def main(logs: Path, since: str) -> None:
    rows = []
    for path in sorted({*logs.rglob("*.json"), *logs.rglob("*.json.gz")}):
        if path.name[:16] < since[:16]:
            continue
        try:
            r = store.load(path)
        except Exception:
            continue
        if not isinstance(r, Run) or r.timing is None:
            continue
        t = r.timing
        q = t.quantiles_ms
        enq = f"{statistics.median(t.enqueue_ms):.3f}" if t.enqueue_ms else "-"
        g = t.gpu_state
        gs = (f"sm {min(g.sm_clock_mhz):.0f}-{max(g.sm_clock_mhz):.0f} mem {min(g.mem_clock_mhz):.0f}-"
              f"{max(g.mem_clock_mhz):.0f} {min(g.temp_c):.0f}-{max(g.temp_c):.0f}C "
              f"{max(g.power_w):.0f}W {g.reasons_seen()}") if g else "-"
        rows.append(f"{r.assignment:10} {r.version:22} {r.case_name:10} {t.method:17} {'R' if t.ranked else ' '} "
                    f"med {t.median_ms:9.4f} p05 {q['p05']:9.4f} p95 {q['p95']:9.4f} n {t.n:3}  enq {enq:>7}  {gs}")
    print("\n".join(rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
