# Source on an offline GPU node from the repo root: installs the carried wheelhouse (make
# wheelhouse) into /tmp/site and puts it and this checkout on PYTHONPATH.
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "gpu_env: wheel install failed" >&2
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
