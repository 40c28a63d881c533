"""The cluster executor plugins are an install of their own (`make install-cluster`): Snakemake imports every
installed executor plugin at every start, so the default environment (`make install`, `make main`) has none, and the
tests, which run the profiles, install them."""

from __future__ import annotations

from pathlib import Path

from tests.test_cuda_lock import _pins

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = {"snakemake-executor-plugin-slurm", "snakemake-executor-plugin-slurm-jobstep",
           "snakemake-executor-plugin-kubernetes"}


def test_the_default_locks_hold_no_executor_plugin_and_the_cluster_lock_holds_them_all():
    cluster = _pins(ROOT / "envs/requirements-cluster.lock.txt")
    assert PLUGINS <= set(cluster)
    for lock in ("envs/requirements-cpu.lock.txt", "envs/requirements-cpu-jax-latest.lock.txt"):
        pins = _pins(ROOT / lock)
        assert not [name for name in pins if name.startswith("snakemake-executor-plugin")], lock
        assert set(pins) & set(cluster) == set(), f"{lock} pins a package of the cluster lock: one place for each"


def test_the_test_targets_install_the_plugins_and_the_main_job_does_not():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile.partition("\n$(VENV)/.cluster-installed: $(VENV)/.installed $(CLUSTER_LOCK)\n")[2].partition("\n\n")[0]
    assert "pip install --quiet -r $(CLUSTER_LOCK) -c $(LOCK)" in rule and "pip check" in rule
    for target in ("test", "test-slow", "test-services", "test-cluster"):
        assert f"\n{target}: install-cluster\n" in makefile, target
    assert "\nmain: install\n" in makefile
