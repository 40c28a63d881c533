# The two commands a newcomer needs (see README):
#   make main   install, then run the main job (snakemake, cpu scale, 2 cores)
#   make test   install, then run the test suite (what CI runs)
#   make install-cluster   add the Slurm and Kubernetes executor plugins (profiles/slurm, profiles/kubernetes)
#   make test-cluster   install Debian's slurm-wlm + munge (apt, as root), then run profiles/slurm on a single-node
#                       Slurm that the test starts on 127.0.0.1 and stops (tests/test_cluster.py)
#   make test-jax-latest   the newest JAX the project supports (Python 3.12, its own venv .venv-jax-latest), fast subset
#   make device-wheels  the wheels folder the device check carries to a GPU machine (scripts/device-check.sh)
PYTHON ?= python3.11
VENV := .venv
LOCK := envs/requirements-cpu.lock.txt
CUDA_LOCK := envs/requirements-cuda.lock.txt
CLUSTER_LOCK := envs/requirements-cluster.lock.txt
# The other end of the supported JAX range: the newest JAX (what the GPU machines' image has) with the flax, optax,
# chex, ... that go with it, on Python 3.12 (JAX >= 0.11 needs it), in a venv of its own.
PYTHON_LATEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
VENV_LATEST := .venv-jax-latest
LATEST_LOCK := envs/requirements-cpu-jax-latest.lock.txt
# One test file per agent family and the losses' files: the fast tests that cross every JAX API the project uses
# (jit/vmap/scan/grad through flax, optax, chex; the host actor-learner; checkpoints); the job runner's subprocess
# tests stay on the lock's JAX (their JAX calls are these).
JAX_LATEST_TESTS ?= tests/losses tests/agents/test_impala.py tests/agents/test_impala_host.py tests/agents/test_frodo.py \
	tests/agents/test_impala_sr.py tests/agents/test_vracer.py tests/agents/test_dqn.py tests/agents/test_ddpg.py \
	tests/agents/test_naf.py tests/agents/test_ppo.py tests/agents/test_acer.py tests/search/test_interpreter.py \
	tests/environments/test_jax_envs.py tests/training/test_actor_learner.py tests/jobs/test_checkpoint.py \
	tests/agents/test_impala_loop.py tests/training/test_placement.py tests/bench/test_device_check.py
DEVICE_WHEELS := .device-wheels
# pip download for the device: CPython 3.12, manylinux x86-64 (pip matches each manylinux_2_N exactly)
DEVICE_PLATFORMS := $(foreach n,17 24 27 28 31 34 35,--platform manylinux_2_$(n)_x86_64) --platform manylinux2014_x86_64 \
	--platform manylinux1_x86_64 --platform linux_x86_64
CORES ?= 2
SCALE ?= cpu

.PHONY: install install-cluster install-cuda install-jax-latest main test test-slow test-services test-cluster test-jax-latest \
	device-wheels lint lock lock-jax-latest

# A venv from a lock: $(call make-venv,PYTHON,VENV,LOCK) (the project editable on top, then pip check).
define make-venv
	$(1) -m venv $(2)
	$(2)/bin/python -m pip install --quiet --upgrade "pip==26.3"
	$(2)/bin/python -m pip install --quiet -r $(3)
	$(2)/bin/python -m pip install --quiet --no-deps -e .
	$(2)/bin/python -m pip check
	touch $(2)/.installed
endef

$(VENV)/.installed: $(LOCK) pyproject.toml
	$(call make-venv,$(PYTHON),$(VENV),$(LOCK))

install: $(VENV)/.installed

# Cluster profiles: the executor plugins, pinned, on top of the CPU lock. Not in the default environment: Snakemake
# imports every installed executor plugin at every start, about 1.2 s of each (README). The tests use them
# (profiles/slurm dry runs, a real Slurm), so the test targets install them.
$(VENV)/.cluster-installed: $(VENV)/.installed $(CLUSTER_LOCK)
	$(VENV)/bin/python -m pip install --quiet -r $(CLUSTER_LOCK) -c $(LOCK)
	$(VENV)/bin/python -m pip check
	touch $@

install-cluster: $(VENV)/.cluster-installed

# GPU machines: the CPU environment plus jax's CUDA 12 plugin at the same jax version (the CPU lock constrains the rest).
# Then every training job logs its devices (device.json in the run folder, `device.*` params in MLflow).
install-cuda: install
	$(VENV)/bin/python -m pip install --quiet -r $(CUDA_LOCK) -c $(LOCK)
	$(VENV)/bin/python -m pip check
	$(VENV)/bin/python -c "import jax; print('jax devices:', jax.devices())"

$(VENV_LATEST)/.installed: $(LATEST_LOCK) pyproject.toml
	$(call make-venv,$(PYTHON_LATEST),$(VENV_LATEST),$(LATEST_LOCK))

install-jax-latest: $(VENV_LATEST)/.installed

# The fast subset above on the newest JAX (the main suite stays on the lock's JAX).
test-jax-latest: install-jax-latest
	$(VENV_LATEST)/bin/python -c "import jax, flax, optax, chex; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'chex', chex.__version__)"
	$(VENV_LATEST)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile $(JAX_LATEST_TESTS)

# The wheels scripts/device-check.sh installs on a GPU machine (no network there): envs/device-wheels.txt at the
# JAX-latest lock's versions, for CPython 3.12 manylinux x86-64; checked (rlrepro/bench/device_wheels.py): no JAX or
# CUDA, every requirement met by the image or the folder, under 48 MiB. Copy it to the GPU machine with the checkout.
device-wheels: install
	rm -rf $(DEVICE_WHEELS).new && mkdir -p $(DEVICE_WHEELS).new
	$(VENV)/bin/python -m rlrepro.bench.device_wheels pins > $(DEVICE_WHEELS).new/requirements.txt
	$(VENV)/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  $(DEVICE_PLATFORMS) -d $(DEVICE_WHEELS).new -r $(DEVICE_WHEELS).new/requirements.txt
	$(VENV)/bin/python -m rlrepro.bench.device_wheels check $(DEVICE_WHEELS).new
	rm -rf $(DEVICE_WHEELS) && mv $(DEVICE_WHEELS).new $(DEVICE_WHEELS)
	du -sh $(DEVICE_WHEELS)

main: install
	$(VENV)/bin/snakemake --cores $(CORES) --rerun-incomplete --config scale=$(SCALE)

# The default suite on TEST_WORKERS processes (pytest-xdist; a test file stays on one worker, so its module fixtures,
# e.g. test_snakemake.py's smoke pipeline, run once).
TEST_WORKERS ?= 2
test: install-cluster
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15

# Test by test over the workers (a few long tests would leave one worker idle file by file); a module whose fixture
# is heavy keeps to one worker with pytest.mark.xdist_group.
test-slow: install-cluster
	$(VENV)/bin/python -m pytest -q -m slow -n $(TEST_WORKERS) --dist loadgroup --durations=15

# MLflow as teams run it: an `mlflow server` on PostgreSQL, started and stopped by the tests (tests/test_tracking_server.py).
# Installs Debian's postgresql when initdb is missing (apt, as root or with passwordless sudo; bounded).
test-services: install-cluster
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; \
	  timeout 300 $$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive timeout 900 $$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql; \
	fi
	$(VENV)/bin/python -m pytest -q -m services

# The packages put sinfo/scontrol on PATH but no config under /etc/slurm: the test's cluster lives in a temporary
# folder (SLURM_CONF), so other snakemake runs on the machine are not slowed by the plugin's `scontrol show config`.
test-cluster: install-cluster
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

# The cluster lock's packages stay in their own lock (install-cluster), out of the default one.
lock:
	@names=$$(sed -n 's/==.*//p' $(CLUSTER_LOCK) | paste -sd'|'); \
	(head -2 $(LOCK); $(VENV)/bin/python -m pip freeze --exclude-editable | grep -v -i -E "^($$names)==") > $(LOCK).new && \
	  mv $(LOCK).new $(LOCK)

lock-jax-latest:
	@names=$$(sed -n 's/==.*//p' $(CLUSTER_LOCK) | paste -sd'|'); \
	(head -4 $(LATEST_LOCK); $(VENV_LATEST)/bin/python -m pip freeze --exclude-editable | grep -v -i -E "^($$names)==") \
	  > $(LATEST_LOCK).new && mv $(LATEST_LOCK).new $(LATEST_LOCK)
