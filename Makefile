# The two commands a newcomer needs (see README):
#   make main   install, then run the main job (snakemake, cpu scale, 2 cores)
#   make test   install, then run the test suite (what CI runs)
#   make test-cluster   install Debian's slurm-wlm + munge (apt, as root), then run profiles/slurm on a single-node
#                       Slurm that the test starts on 127.0.0.1 and stops (tests/test_cluster.py)
PYTHON ?= python3.11
VENV := .venv
LOCK := envs/requirements-cpu.lock.txt
CUDA_LOCK := envs/requirements-cuda.lock.txt
CORES ?= 2
SCALE ?= cpu

.PHONY: install install-cuda main test test-slow test-services test-cluster lint lock

$(VENV)/.installed: $(LOCK) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade "pip==26.3"
	$(VENV)/bin/python -m pip install --quiet -r $(LOCK)
	$(VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(VENV)/bin/python -m pip check
	touch $@

install: $(VENV)/.installed

# GPU machines: the CPU environment plus jax's CUDA 12 plugin at the same jax version (the CPU lock constrains the rest).
# Then every training job logs its devices (device.json in the run folder, `device.*` params in MLflow).
install-cuda: install
	$(VENV)/bin/python -m pip install --quiet -r $(CUDA_LOCK) -c $(LOCK)
	$(VENV)/bin/python -m pip check
	$(VENV)/bin/python -c "import jax; print('jax devices:', jax.devices())"

main: install
	$(VENV)/bin/snakemake --cores $(CORES) --rerun-incomplete --config scale=$(SCALE)

test: install
	$(VENV)/bin/python -m pytest -q

test-slow: install
	$(VENV)/bin/python -m pytest -q -m slow

# MLflow as teams run it: an `mlflow server` on PostgreSQL, started and stopped by the tests (tests/test_tracking_server.py).
# Installs Debian's postgresql when initdb is missing (apt, as root or with passwordless sudo; bounded).
test-services: install
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; \
	  timeout 300 $$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive timeout 900 $$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql; \
	fi
	$(VENV)/bin/python -m pytest -q -m services

# The packages put sinfo/scontrol on PATH but no config under /etc/slurm: the test's cluster lives in a temporary
# folder (SLURM_CONF), so other snakemake runs on the machine are not slowed by the plugin's `scontrol show config`.
test-cluster: install
	@command -v slurmctld >/dev/null && command -v munged >/dev/null || { \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; \
	  DEBIAN_FRONTEND=noninteractive timeout 900 $$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q slurm-wlm munge \
	  || { timeout 300 $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 $$sudo apt-get \
	       -o DPkg::Lock::Timeout=600 install -y -q slurm-wlm munge; }; }
	timeout 1400 $(VENV)/bin/python -m pytest -q -s -m cluster tests/test_cluster.py

lint: install
	$(VENV)/bin/snakemake --lint
	$(VENV)/bin/python -m rlrepro validate
	$(VENV)/bin/python -m rlrepro schema --check

lock:
	@(head -2 $(LOCK); $(VENV)/bin/python -m pip freeze --exclude-editable) > $(LOCK).new && mv $(LOCK).new $(LOCK)
