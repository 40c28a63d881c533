"""A real PostgreSQL server for tests (Debian's ``postgresql``): initdb into a fresh folder, ``postgres`` on a free port
of 127.0.0.1, stopped by its process id. Every wait is bounded; nothing is left running.

PostgreSQL refuses to run as root: as root (the CI machine), the server runs as the ``postgres`` user the Debian
package creates, in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bindir() -> Path | None:
    """The folder of ``initdb``/``postgres`` (Debian keeps them out of PATH, under /usr/lib/postgresql/<v>/bin)."""
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_user() -> dict:
    """Popen keywords that drop root to the ``postgres`` user (none when not root)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam("postgres")  # KeyError: the Debian package is not installed
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextmanager
def postgres_server(*, start_timeout: float = 60, database: str = "mlflow") -> Iterator[str]:
    """Start a throwaway PostgreSQL; yield a SQLAlchemy URI of ``database`` in it; stop it and delete its files."""
    bindir = postgres_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL's initdb not found (apt-get install postgresql; `make test-services` does)")
    user = _as_user()
    folder = Path(tempfile.mkdtemp(prefix="rlrepro-pg-"))
    data, sockets, log_path = folder / "data", folder / "sockets", folder / "postgres.log"
    sockets.mkdir()
    if user:
        for path in (folder, sockets):
            os.chown(path, user["user"], user["group"])
    process = None
    # `timeout` (CI) ends pytest with SIGTERM, whose default action skips every `finally`: turn it into an
    # interrupt while the server runs, so it is stopped and its files removed.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "rlrepro", "--auth=trust", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120, cwd=folder, **user)
        port = _free_port()
        log = open(log_path, "w")
        if user:
            os.chown(log_path, user["user"], user["group"])
        # The server process itself (not pg_ctl's daemonised child): its pid is ours to stop. fsync off: a test
        # database, thrown away after the test.
        process = subprocess.Popen(
            [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1", "-k", str(sockets),
             "-c", "fsync=off", "-c", "max_connections=100"],
            stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True, **user,
        )
        log.close()
        deadline = time.monotonic() + start_timeout
        while subprocess.run([str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-t", "2"],
                             capture_output=True, timeout=30).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not start within {start_timeout:g} s: {log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        subprocess.run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "rlrepro", database],
                       check=True, capture_output=True, timeout=60)
        yield f"postgresql://rlrepro@127.0.0.1:{port}/{database}"
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # "fast" shutdown: ends the sessions, stops cleanly
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
