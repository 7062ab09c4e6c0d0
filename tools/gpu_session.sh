#!/usr/bin/env bash
# One device session: set up the carried wheels, then run the given `report` commands (one per
# argument, each a quoted string) under a deadline, logging to $OUT/session.log, and always ship back
# what the session made under logs/ (new records, their source texts, the files beside them) as
# $OUT/new_logs.tgz, even when a step hangs (a deadlocked kernel cannot be stopped from inside).
# Here, `report merge new_logs.tgz` brings them into the checkout (a second merge changes nothing).
#   DEADLINE_S=540 STEP_TIMEOUT_S=240 tools/gpu_session.sh "run flashattn -v v01" "sweep flashattn v03"
# A step that is not a `report` command (a probe script) is given with a leading '!':
#   tools/gpu_session.sh "run transform -v v17" "!python tools/host_call_probe.py"
# The records name the commit their code is at, and the device's copy of the repository keeps the
# git state of the session's start, not the commits made since: say it, from `git rev-parse HEAD`
# and `git status --porcelain kernels reporter` here, as
#   REPORT_GIT_COMMIT=<hash> REPORT_GIT_DIRTY=0 tools/gpu_session.sh ...
# (REPORT_GIT_COMMIT=device takes the copy's own state, for a checkout made on that machine).
set -uo pipefail
if [ -z "${REPORT_GIT_COMMIT:-}" ]; then
  echo "gpu_session: set REPORT_GIT_COMMIT (and REPORT_GIT_DIRTY=0|1) to this checkout's state; the device copy's" \
       "git state is the session's start, which the records would name instead" >&2
  exit 2
fi
# a hash taken on the device (`$(git rev-parse HEAD)` in the command line) names the copy's start: when the tree's
# code differs from that commit, the records would name code that is not what ran
if [ "$REPORT_GIT_COMMIT" != device ] && copy_head=$(git rev-parse HEAD 2>/dev/null) \
   && [ "$REPORT_GIT_COMMIT" = "$copy_head" ] && ! git diff --quiet HEAD -- kernels reporter tools 2>/dev/null; then
  echo "gpu_session: REPORT_GIT_COMMIT is this copy's own HEAD ($copy_head), the session's start, and kernels/," \
       "reporter/ or tools/ differ from it: name the checkout's commit, computed there (git rev-parse HEAD)" >&2
  exit 2
fi
[ "$REPORT_GIT_COMMIT" = device ] && unset REPORT_GIT_COMMIT REPORT_GIT_DIRTY
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
DEADLINE_S=${DEADLINE_S:-540}
STEP_TIMEOUT_S=${STEP_TIMEOUT_S:-300}
. "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/session.log"
start=$(date +%s)
# what is under logs/ now (path, size, mtime): the session ships back what is new or changed since
before=$(mktemp); find logs -type f ! -name '.*' -printf '%p\t%s\t%T@\n' | sort > "$before"
for cmd in "$@"; do
  left=$(( DEADLINE_S - ($(date +%s) - start) ))
  [ "$left" -lt 15 ] && { echo "=== skipped (deadline): report $cmd" | tee -a "$OUT/session.log"; continue; }
  step=$(( left < STEP_TIMEOUT_S ? left : STEP_TIMEOUT_S ))
  if [ "${cmd:0:1}" = "!" ]; then run="${cmd:1}"; else run="python3 -m reporter.cli $cmd"; fi
  echo "=== $run  (t=$(( $(date +%s) - start ))s, limit ${step}s)" | tee -a "$OUT/session.log"
  eval "timeout -k 5 $step $run" 2>&1 | tee -a "$OUT/session.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "=== TIMED OUT after ${step}s: $run" | tee -a "$OUT/session.log"
done
find logs -type f ! -name '.*' -printf '%p\t%s\t%T@\n' | sort | comm -13 "$before" - | cut -f1 \
  | tar czf "$OUT/new_logs.tgz" -T -
echo "=== shipped back: $(tar tzf "$OUT/new_logs.tgz" | wc -l) new files under logs/ in new_logs.tgz" | tee -a "$OUT/session.log"
echo "=== session done in $(( $(date +%s) - start ))s"
