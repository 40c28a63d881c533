#!/usr/bin/env bash
# The device check, one command, no network (rlrepro/bench/device_check.py says what it runs):
#   scripts/device-check.sh                      on a GPU machine: the paper's batch sizes (about 6-8 min)
#   JAX_PLATFORMS=cpu DEVICE_CHECK_SIZE=small scripts/device-check.sh   the same steps on CPU at small sizes (CI)
# Output folder: $DEVICE_CHECK_OUT, else $OUT/device-check when OUT is set (a folder the machine's job hands back),
# else results/device-check-<date>; it gets device-check.log (everything printed), summary.json, throughput-rows.csv.
# Wheels: when the folder $DEVICE_WHEELS (default .device-wheels, built by `make device-wheels`) exists, its wheels
# are installed without a network into a temporary site folder put first on PYTHONPATH (never JAX: the machine's).
# Python: $PYTHON, else python3. Exit status 0 when every smoke job and benchmark passed.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${DEVICE_CHECK_OUT:-}
if [[ -z "$out" ]]; then
  if [[ -n "${OUT:-}" ]]; then out="$OUT/device-check"; else out="results/device-check-$(date -u +%Y%m%dT%H%M%S)"; fi
fi
mkdir -p "$out"
log="$out/device-check.log"
: >"$log"
say() { echo "$*" | tee -a "$log"; }

say "device check $(date -u +%FT%TZ) in $(pwd) (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)); output in $out"
wheels=${DEVICE_WHEELS:-.device-wheels}
if [[ -d "$wheels" ]]; then
  site=$(mktemp -d -t device-check-site.XXXXXX)
  say "installing $(ls "$wheels"/*.whl | wc -l) wheels from $wheels into $site (no index, no deps)"
  if ! "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$wheels"/*.whl 2>&1 | tee -a "$log"; then
    say "the wheels did not install"; exit 2
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
else
  say "no wheels folder $wheels: using $python's own packages"
fi
export PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee -a "$log"
"$python" -c "import sys, jax, jaxlib, flax, optax, chex, numpy; print('python', sys.version.split()[0], '| jax', jax.__version__,
'jaxlib', jaxlib.__version__, '| flax', flax.__version__, '| optax', optax.__version__, '| chex', chex.__version__,
'| numpy', numpy.__version__); print('devices:', jax.devices())" 2>&1 | tee -a "$log" || { say "JAX does not start"; exit 2; }
# the driver appends to the same log
"$python" -m rlrepro.bench.device_check run --out "$out"
status=$?
say "exit $status"
exit $status
