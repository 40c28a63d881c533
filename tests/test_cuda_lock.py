"""Issue 15: GPU readiness checked without a GPU: the CUDA lock (`make install-cuda`) is the CPU lock's jax with its
CUDA 12 plugin, and never a second version of a package the CPU lock pins."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path}: {line!r} is not pinned (name==version)"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_cuda_lock_is_the_cpu_locks_jax_with_its_cuda_plugin():
    cpu, cuda = _pins(ROOT / "envs/requirements-cpu.lock.txt"), _pins(ROOT / "envs/requirements-cuda.lock.txt")
    assert cuda["jax"] == cpu["jax"] and cuda["jaxlib"] == cpu["jaxlib"]
    # jax refuses a plugin of another version at import ("jax-cuda12-plugin version ... does not match")
    assert cuda["jax-cuda12-plugin"] == cuda["jax-cuda12-pjrt"] == cpu["jax"]
    assert {name: v for name, v in cuda.items() if name in cpu and cpu[name] != v} == {}
    assert any(name.startswith("nvidia-cudnn") for name in cuda)


def test_make_install_cuda_installs_that_lock_constrained_by_the_cpu_lock():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile.partition("\ninstall-cuda: install\n")[2].partition("\n\n")[0]
    assert "pip install --quiet -r $(CUDA_LOCK) -c $(LOCK)" in rule and "pip check" in rule
    assert "CUDA_LOCK := envs/requirements-cuda.lock.txt" in makefile
