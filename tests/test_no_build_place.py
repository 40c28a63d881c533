"""The project speaks of itself only: no path of the machines it was built on and no name of their tools in any
tracked file (a user has none of them). Docs and scripts say "a GPU machine without a network", "the wheels folder",
"a results folder" instead."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Absolute paths of the build machines (home and work folders), anywhere.
MACHINE_PATHS = re.compile(r"(?<![\w.])/(?:work|root)/")
#: A temporary folder given as a place to look in documentation or in a script (tests may use one for fixtures).
TMP_IN_DOCS = re.compile(r"(?<![\w/])/tmp/")
#: Words of the remote-run tool the GPU checks were made with: its call, its options, the folder it hands back. Each is
#: kept here in two halves, joined when the test runs, so that this file does not name them itself.
_HALVES = (("files", "_at"), ("give", "_back"), ("carry", "=["), ("device", " tool"), ("run(", "command="),
           (".dev", "ice/"))
TOOL_WORDS = re.compile("|".join(re.escape(a + b) for a, b in _HALVES))


def _tracked() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    return [REPO / n.decode() for n in names if n]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):  # binary (figures) or removed in the working tree
        return None


def test_no_tracked_file_names_a_build_machine_path_or_tool() -> None:
    found = []
    for path in _tracked():
        rel = path.relative_to(REPO).as_posix()
        if rel == "tests/test_no_build_place.py" or (text := _text(path)) is None:
            continue
        docs = path.suffix in (".md", ".sh", ".txt", ".cfg", ".toml", ".yaml", ".yml") or path.name == "Makefile"
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATHS.search(line) or TOOL_WORDS.search(line) or (docs and TMP_IN_DOCS.search(line)):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
    assert not found, "paths or tools of the build machines in tracked files:\n" + "\n".join(found)
