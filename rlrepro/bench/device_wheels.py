"""The wheels the device check carries to a GPU machine (``make device-wheels``): what its image lacks, and the check.

The device machine has no network; its image (Python 3.12, a CUDA build of JAX 0.11.x, flax, optax, chex, numpy,
scipy, pandas, matplotlib, ...: ``envs/device-image.txt``) lacks some of what rlrepro imports. ``envs/device-wheels.txt``
names those packages; their versions come from the JAX-latest lock (``envs/requirements-cpu-jax-latest.lock.txt``: a
Python 3.12 install tested with the JAX the image has). ``pins`` prints them for ``pip download``; ``check`` verifies
the downloaded folder: no JAX or CUDA wheel, one version per package, every wheel installable on CPython 3.12
manylinux x86-64, every requirement of every wheel met by the image or another carried wheel, and the folder under
48 MiB (a GPU machine without a network gets the checkout and this folder copied to it: both stay small).
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "envs" / "device-wheels.txt"
IMAGE = ROOT / "envs" / "device-image.txt"
LOCK = ROOT / "envs" / "requirements-cpu-jax-latest.lock.txt"
LIMIT_BYTES = 48 * 2**20  # copied with the checkout to the GPU machine: both together stay under 64 MiB
FORBIDDEN = re.compile(r"^(jax|jaxlib|jax-cuda.*|nvidia-.*|torch|triton)$")
# the device: CPython 3.12 on Linux x86-64 (markers of the requirements inside the wheels are read for it)
TARGET = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "platform_system": "Linux",
          "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "extra": ""}


def read_names(path: Path) -> list[str]:
    """Package names, one a line; ``#`` starts a comment."""
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(canonicalize_name(line))
    return names


def lock_versions(path: Path) -> dict[str, str]:
    """``name==version`` lines of a pip-freeze lock, by canonical name."""
    versions = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            versions[canonicalize_name(name.strip())] = version.strip()
    return versions


def pins(names: list[str], lock: dict[str, str], lock_path: Path = LOCK) -> list[str]:
    """``name==version`` for each name, from the lock; raises ValueError naming a package the lock lacks."""
    missing = [n for n in names if n not in lock]
    if missing:
        raise ValueError(f"{lock_path}: no pin for {', '.join(missing)} (named in {NAMES})")
    return [f"{n}=={lock[n]}" for n in names]


def _installable(filename: str) -> bool:
    """A wheel that installs on CPython 3.12, Linux x86-64 (manylinux)."""
    tags = parse_wheel_filename(filename)[3]
    for tag in tags:
        python_ok = tag.interpreter in ("py3", "cp312") or (tag.abi == "abi3" and tag.interpreter in
                                                           {f"cp3{m}" for m in range(2, 13)})
        platform_ok = tag.platform == "any" or (tag.platform.endswith("x86_64") and "linux" in tag.platform)
        if python_ok and platform_ok:
            return True
    return False


def _requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode("utf-8", errors="replace")
    requirements = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            requirement = Requirement(line.split(":", 1)[1].strip())
            if requirement.marker is None or Marker(str(requirement.marker)).evaluate(TARGET):
                requirements.append(requirement)
    return requirements


def check(folder: Path, image: list[str], limit_bytes: int = LIMIT_BYTES) -> list[str]:
    """The problems of a wheels folder (empty: fine); see the module's docstring."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        return [f"{folder}: no wheels"]
    problems = []
    names: dict[str, list[str]] = {}
    for wheel in wheels:
        name = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        names.setdefault(name, []).append(wheel.name)
        if FORBIDDEN.match(name):
            problems.append(f"{wheel.name}: JAX, CUDA and PyTorch stay the machine's own: never carried")
        if not _installable(wheel.name):
            problems.append(f"{wheel.name}: not installable on CPython 3.12, Linux x86-64")
    problems += [f"{name}: {len(files)} versions ({', '.join(files)}): one stops the install" for name, files in
                 names.items() if len(files) > 1]
    have = set(names) | {canonicalize_name(n) for n in image}
    for wheel in wheels:
        for requirement in _requires(wheel):
            if canonicalize_name(requirement.name) not in have:
                problems.append(f"{wheel.name} needs {requirement}: neither in the image ({IMAGE.name}) nor carried "
                                f"(add it to {NAMES.name})")
    size = sum(w.stat().st_size for w in wheels)
    if size > limit_bytes:
        problems.append(f"{folder}: {size / 2**20:.1f} MiB of wheels, over the {limit_bytes / 2**20:.0f} MiB allowed "
                        "(the folder is copied to the GPU machine with the checkout: keep both small)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench.device_wheels", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("pins", help="print name==version of each carried package (for pip download -r)")
    p = sub.add_parser("check", help="check a downloaded wheels folder")
    p.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "pins":
        print("\n".join(pins(read_names(NAMES), lock_versions(LOCK))))
        return 0
    problems = check(args.folder, read_names(IMAGE))
    for problem in problems:
        print(problem, file=sys.stderr)
    wheels = sorted(args.folder.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"{args.folder}: {len(wheels)} wheels, {size / 2**20:.1f} MiB (limit {LIMIT_BYTES / 2**20:.0f} MiB): "
          + ("FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
