# The two commands a newcomer needs (see README):
#   make main   install, then run the main job (snakemake, cpu scale, 2 cores)
#   make test   install, then run the test suite (what CI runs)
PYTHON ?= python3.11
VENV := .venv
LOCK := envs/requirements-cpu.lock.txt
CORES ?= 2
SCALE ?= cpu

.PHONY: install main test test-slow lint lock

$(VENV)/.installed: $(LOCK) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade "pip==26.3"
	$(VENV)/bin/python -m pip install --quiet -r $(LOCK)
	$(VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(VENV)/bin/python -m pip check
	touch $@

install: $(VENV)/.installed

main: install
	$(VENV)/bin/snakemake --cores $(CORES) --rerun-incomplete --config scale=$(SCALE)

test: install
	$(VENV)/bin/python -m pytest -q

test-slow: install
	$(VENV)/bin/python -m pytest -q -m slow

lint: install
	$(VENV)/bin/snakemake --lint
	$(VENV)/bin/python -m rlrepro validate
	$(VENV)/bin/python -m rlrepro schema --check

lock:
	@(head -2 $(LOCK); $(VENV)/bin/python -m pip freeze --exclude-editable) > $(LOCK).new && mv $(LOCK).new $(LOCK)
