#!/usr/bin/env bash
# One device session: set up the carried wheels, then run the given `report` commands (one per
# argument, each a quoted string) under a deadline, logging to $OUT/session.log, and always leave
# logs/ as $OUT/logs.tgz, even when a step hangs (a deadlocked kernel cannot be stopped from inside).
#   DEADLINE_S=540 STEP_TIMEOUT_S=240 tools/gpu_session.sh "run flashattn -v v01" "sweep flashattn v03"
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
DEADLINE_S=${DEADLINE_S:-540}
STEP_TIMEOUT_S=${STEP_TIMEOUT_S:-300}
. "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/session.log"
start=$(date +%s)
for cmd in "$@"; do
  left=$(( DEADLINE_S - ($(date +%s) - start) ))
  [ "$left" -lt 15 ] && { echo "=== skipped (deadline): report $cmd" | tee -a "$OUT/session.log"; continue; }
  step=$(( left < STEP_TIMEOUT_S ? left : STEP_TIMEOUT_S ))
  echo "=== report $cmd  (t=$(( $(date +%s) - start ))s, limit ${step}s)" | tee -a "$OUT/session.log"
  eval "timeout -k 5 $step python3 -m reporter.cli $cmd" 2>&1 | tee -a "$OUT/session.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "=== TIMED OUT after ${step}s: report $cmd" | tee -a "$OUT/session.log"
done
tar czf "$OUT/logs.tgz" logs
echo "=== session done in $(( $(date +%s) - start ))s"
