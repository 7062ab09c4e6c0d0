#!/usr/bin/env bash
# One device session: install carried wheels, then run the given `report` commands (one per
# argument, each a quoted string), writing records under logs/ and a tarball of them under $OUT.
#   tools/gpu_session.sh "run flashattn --version v01" "sweep flashattn v03"
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)
for cmd in "$@"; do
  echo "=== report $cmd  (t=$(( $(date +%s) - start ))s)"
  eval "python3 -m reporter.cli $cmd" 2>&1 | tee -a "$OUT/session.log"
done
tar czf "$OUT/logs.tgz" logs
echo "=== session done in $(( $(date +%s) - start ))s"
