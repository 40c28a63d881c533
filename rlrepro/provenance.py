"""Where a number came from: the code's git commit (``-dirty`` when uncommitted changes exist)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent


@functools.cache
def git_commit() -> str:
    """The commit of the rlrepro checkout, ``<sha>-dirty`` with uncommitted changes, ``unknown`` outside git."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no", "--", "rlrepro", "Snakefile"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if status else sha
