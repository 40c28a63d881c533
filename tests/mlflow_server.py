"""A real ``mlflow server`` on 127.0.0.1 for tests: one worker, no job execution, stopped by its process id."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def mlflow_server(folder: Path, *, start_timeout: float = 180, backend_store_uri: str | None = None,
                  workers: int = 1) -> Iterator[str]:
    """Start ``mlflow server`` (store ``backend_store_uri``, default sqlite under ``folder``; artifacts under ``folder``);
    yield its URL; stop it (bounded)."""
    port = _free_port()
    exe = Path(sys.executable).with_name("mlflow")
    store = backend_store_uri or f"sqlite:///{folder / 'server.db'}"
    command = [str(exe), "server", "--backend-store-uri", store,
               "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
               "--workers", str(workers)]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    log = open(folder / "server.log", "w")
    # A session of its own, so the server's workers are stopped with it (by this process group's id only).
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start: {(folder / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
        log.close()


def rest(url: str, endpoint: str, body: dict | None = None, **query: str) -> dict:
    """One call of MLflow's REST API (GET with a query, or POST with a JSON body)."""
    address = f"{url}/api/2.0/mlflow/{endpoint}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(address, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")
