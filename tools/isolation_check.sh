#!/usr/bin/env bash
# The worker process on the GPU, in one device call (issue 16, part 1):
#  1. every broken version of tests/fixtures/broken_project through `report run` and `report sweep`;
#  2. every committed version still passes its checks (the check now also compares dtypes);
#  3. the same version timed in a worker and in-process, A/B/A, so that isolation is seen not to move
#     the figure (records under $OUT/chk, with a copy of logs/devices for the ceilings);
#  4. peers (cuDNN, do_bench-style baselines) and --interleave through the worker, quick.
# Two parts, one device call each (a call has 10 minutes): `tools/isolation_check.sh 1` does 1 and 2,
# `tools/isolation_check.sh 2` does 3 and 4 and prints a table of the A/B/A figures last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/chk"
. "$(dirname "$0")/gpu_env.sh"
cp -r logs/devices "$OUT/chk/"
step() { local t=$1; shift; echo "=== $* (limit ${t}s)" | tee -a "$OUT/isolation.log"; local s=$(date +%s)
         timeout -k 5 "$t" "$@" >>"$OUT/isolation.log" 2>&1; echo "=== rc=$? in $(( $(date +%s) - s ))s" | tee -a "$OUT/isolation.log"; }
if [ "${1:-1}" = 1 ]; then
step 240 python3 -m pytest tests/test_gpu_broken.py -m gpu -q -s -p no:cacheprovider
step 300 python3 -m pytest tests/test_gpu_versions.py -m gpu -q -p no:cacheprovider
grep -E "^(FAILED|ERROR)|[0-9]+ (passed|failed)" "$OUT/isolation.log"
exit 0
fi
for iso in --isolate --no-isolate --isolate; do
  step 120 python3 -m reporter.cli run transform -v v10 -c benchmark --hold --no-peers $iso --logs "$OUT/chk"
done
step 150 python3 -m reporter.cli run broken --root tests/fixtures/broken_project --logs "$OUT/broken" -c small \
  --min-reps 5 --max-reps 5 --rest-s 0 --timeout-s 20
step 180 python3 -m reporter.cli run flashattn -v v15 -c test_small --quick --logs "$OUT/chk"
step 120 python3 -m reporter.cli run histogram -v v06 -v v07 -c test_small --quick --interleave --logs "$OUT/chk"
python3 - "$OUT/chk" <<'PY' | tee -a "$OUT/isolation.log"
import sys
from pathlib import Path
from reporter import store
rows = sorted((store.load(p) for p in [*Path(sys.argv[1]).glob("transform/*/*.json.gz"), *Path(sys.argv[1]).glob("transform/*/*.json")]), key=lambda r: r.run_id)
print(f"{'run':<24} {'process':<11} {'median µs':>10} {'mean µs':>9} {'n':>4}")
for r in rows:
    how = "in-process" if "--no-isolate" in r.command else "worker"
    t = r.timing
    print(f"{r.run_id[:24]:<24} {how:<11} {1e3 * t.median_ms:>10.1f} {1e3 * t.mean_ms:>9.1f} {t.n:>4}" if t else f"{r.run_id} {how} {r.error}")
PY
