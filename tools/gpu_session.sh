#!/usr/bin/env bash
# One device session: set up the carried wheels, then run the given `report` commands (one per
# argument, each a quoted string), logging to $OUT/session.log and leaving logs/ as a tarball.
#   tools/gpu_session.sh "run flashattn --version v01" "sweep flashattn v03"
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/session.log"
start=$(date +%s)
for cmd in "$@"; do
  echo "=== report $cmd  (t=$(( $(date +%s) - start ))s)" | tee -a "$OUT/session.log"
  eval "python3 -m reporter.cli $cmd" 2>&1 | tee -a "$OUT/session.log"
done
tar czf "$OUT/logs.tgz" logs
echo "=== session done in $(( $(date +%s) - start ))s"
