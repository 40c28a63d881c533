"""Headless Chromium for the browser checks of the slow suite (Debian's ``chromium``; ``.ci/run`` installs it).

Every call starts its own browser with a fresh profile and the flags that keep it off the network (no background
networking, component updates, sync or first-run pages); pages under test are local files or 127.0.0.1.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--hide-scrollbars",
)

#: Injected into a copy of a page: after load, marks every table and image with what a reader would see.
VISIBILITY_SCRIPT = """
<script>
window.addEventListener('load', () => {
  for (const el of document.querySelectorAll('table, img')) {
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    const shown = box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && style.display !== 'none';
    el.setAttribute('data-visible', shown ? 'yes' : 'no');
    if (el.tagName === 'IMG') el.setAttribute('data-loaded', el.complete && el.naturalWidth > 0 ? 'yes' : 'no');
  }
  document.body.setAttribute('data-checked', 'yes');
});
</script>
"""


def chromium() -> str:
    """The chromium executable, or skip with the reason (CI installs it; see .ci/run)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed and this test does not install it: `apt-get install -y chromium` (.ci/run does)")


def run_chromium(url: str, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run headless chromium on ``url`` with a throw-away profile; stdout holds --dump-dom's DOM."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, url]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def screenshot(url: str, path: Path, *, size: str = "1400,2200", budget_ms: int = 5000) -> Path:
    """A PNG of the page as a reader sees it after ``budget_ms`` of virtual time."""
    result = run_chromium(url, f"--screenshot={path}", f"--window-size={size}", f"--virtual-time-budget={budget_ms}")
    assert path.exists() and path.stat().st_size > 0, f"no screenshot: {result.stderr[-2000:]}"
    return path


def dump_dom(url: str, *, budget_ms: int = 5000, size: str = "1400,2200") -> str:
    """The DOM after load (and after the page's scripts ran)."""
    result = run_chromium(url, "--dump-dom", f"--window-size={size}", f"--virtual-time-budget={budget_ms}")
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


def distinct_colours(png: Path) -> int:
    """How many different colours a PNG has (a blank page has one or two)."""
    from matplotlib.image import imread

    import numpy as np

    pixels = imread(png)[..., :3].reshape(-1, 3)
    return len(np.unique((pixels * 255).astype(np.uint8), axis=0))
