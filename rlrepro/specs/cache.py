"""Validated specs kept between DAG builds: a spec whose file and whose validating code are unchanged is read back
rather than validated again (issue 49: Snakemake builds the DAG on every invocation, `snakemake -n` included, and
validating every spec at every scale was a third of it).

Off unless a folder is given (``use_spec_cache``): the Snakefile keeps it in Snakemake's own folder of the working
directory (``.snakemake/rlrepro-specs``; a dry run writes nothing under the results). An entry's key is the spec file's path and bytes and a stamp of the code and data that
validation reads: every ``rlrepro`` module and reference table (path, size, modification time), Python's and
pydantic's versions. Any change there starts a new stamp, and the first entry written under it removes the others.
An entry that cannot be read is validated again; a cache that cannot be written is no error.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

_PACKAGE = Path(__file__).resolve().parents[1]
_folder: Path | None = None
T = TypeVar("T")


def use_spec_cache(folder: str | Path | None) -> None:
    """Keep validated specs under ``folder`` from now on in this process (None: validate every time)."""
    global _folder
    _folder = Path(folder) if folder is not None else None


@functools.lru_cache(maxsize=1)
def code_stamp() -> str:
    """A stamp of what validation reads besides the spec: the package's modules and data files, Python, pydantic."""
    import pydantic  # noqa: PLC0415

    digest = hashlib.sha256(f"{sys.version}|{pydantic.VERSION}".encode())
    for path in sorted([*_PACKAGE.rglob("*.py"), *(_PACKAGE / "data").glob("*.csv")]):
        stat = path.stat()
        digest.update(f"{path.relative_to(_PACKAGE)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def cached(path: Path, load: Callable[[Path], T]) -> T:
    """``load(path)``, or its result kept from an earlier call on the same file bytes and code."""
    if _folder is None:
        return load(path)
    try:
        data = path.read_bytes()
    except OSError:
        return load(path)  # its own clear error
    stamp = code_stamp()
    key = hashlib.sha256(str(path.resolve()).encode() + b"\0" + data).hexdigest()[:24]
    entry = _folder / f"{stamp}-{key}.pickle"
    try:
        return pickle.loads(entry.read_bytes())  # noqa: S301 -- written by this function, under this code stamp
    except Exception:  # noqa: BLE001 -- missing, partly written or unreadable: validate again
        pass
    value = load(path)
    try:
        _folder.mkdir(parents=True, exist_ok=True)
        for stale in _folder.glob("*.pickle"):
            if not stale.name.startswith(f"{stamp}-"):
                stale.unlink(missing_ok=True)
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, entry)
    except OSError:
        pass
    return value
