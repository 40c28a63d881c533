"""Reachability and retries: training never waits on tracking (a bounded probe, HTTP bounds, transient errors
retried with backoff, a dead store reported once)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator

from rlrepro.tracking.common import T, sqlite_db_path


#: Seconds the one probe of a tracking server may take before training goes on without it.
PROBE_TIMEOUT_S = 3.0
#: Bounds put on MLflow's own HTTP client (unless the user set them): MLflow's defaults (7 retries with
#: backoff factor 2, 120 s timeout) made every call to a dead server take minutes.
HTTP_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    # MLflow's usage telemetry thread, failing to reach its endpoint (an offline node), unsets an environment
    # variable while a request of ours reads os.environ: the request failed with KeyError '_MLFLOW_TELEMETRY_SESSION_ID'
    # (seen publishing to a live server here). It also sends nothing from a cluster.
    "MLFLOW_DISABLE_TELEMETRY": "true",
}


class StoreUnreachableError(ConnectionError):
    """The tracking server did not answer."""


def bound_http_requests() -> None:
    """Bound each MLflow HTTP request (a few seconds when refused, ~20 s when the server hangs)."""
    for name, value in HTTP_BOUNDS.items():
        os.environ.setdefault(name, value)


def probe_store(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the tracking server behind ``uri`` cannot be used now, or None when it answers (or is not a server).

    One HTTP request to the server's ``/health`` with a short timeout; any HTTP answer counts as reachable.
    sqlite and other database URIs are not probed (a locked database is waited for, boundedly, by the retries).
    """
    import urllib.error
    import urllib.request

    if not uri.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None  # the server answered (e.g. a proxy without /health)
    except (OSError, ValueError) as error:  # URLError, refused, timeout, bad URL
        reason = getattr(error, "reason", error)
        return f"no answer from {uri} within {timeout:g} s ({reason})"


def wait_for_store(uri: str, wait_s: float, say: Callable[[str], None]) -> None:
    """Probe until the server answers or ``wait_s`` have passed, saying what is waited for.

    Raises:
        StoreUnreachableError: no answer within ``wait_s`` (at least one probe is made).
    """
    deadline = time.monotonic() + wait_s
    reason = probe_store(uri)
    if reason is None:
        return
    say(f"waiting up to {wait_s:g} s for the tracking server {uri}: {reason}")
    while time.monotonic() + PROBE_TIMEOUT_S < deadline:
        time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
        reason = probe_store(uri)
        if reason is None:
            say(f"the tracking server {uri} answers")
            return
    raise StoreUnreachableError(reason)


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


_TRANSIENT_TYPE_NAMES = {
    "OperationalError",  # sqlite3 / SQLAlchemy: database is locked, disk I/O error, ...
    "ConnectionError",  # builtin and requests
    "ConnectTimeout",
    "ReadTimeout",
    "Timeout",
    "TimeoutError",
    "ChunkedEncodingError",
}
_TRANSIENT_MESSAGES = ("database is locked", "database table is locked", "TEMPORARILY_UNAVAILABLE")
_TRANSIENT_ERROR_CODES = {"TEMPORARILY_UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL_ERROR"}


def _is_transient(exc: BaseException) -> bool:
    """Worth retrying: sqlite lock/operational errors, connection errors, MLflow 503/429/5xx."""
    for e in _exception_chain(exc):
        if any(t.__name__ in _TRANSIENT_TYPE_NAMES for t in type(e).__mro__):
            return True
        if getattr(e, "error_code", None) in _TRANSIENT_ERROR_CODES:
            return True
        msg = str(e)
        if any(m in msg for m in _TRANSIENT_MESSAGES):
            return True
    return False


_UNREACHABLE_TYPE_NAMES = {
    "StoreUnreachableError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectTimeout",
    "ReadTimeout",
    "MaxRetryError",
    "NewConnectionError",
}


def _is_unreachable(exc: BaseException) -> bool:
    """A tracking server that does not answer (not a locked sqlite file, which is waited for)."""
    for e in _exception_chain(exc):
        if any(t.__name__ in _UNREACHABLE_TYPE_NAMES for t in type(e).__mro__):
            return True
        if any(m in str(e) for m in ("Max retries exceeded", "Connection refused", "Failed to establish")):
            return True
    return False


def _uninterrupted(fn: Callable[[], T]) -> T:
    """``fn()`` with Ctrl-C and SIGTERM held until it returns (main thread only; one MLflow call is short).

    An interrupt that lands inside an MLflow call can leave this process's sqlite connection in an open write
    transaction: the store then stays locked for the other jobs and for this job's own KILLED marking.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn()
    received: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is None or handler == signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, lambda number, frame: received.append(number))
    try:
        return fn()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])  # delivered now, to the handler that was in place


def _retry(
    fn: Callable[[], T],
    *,
    tries: int = 10,
    base_delay: float = 0.05,
    max_delay: float = 5.0,
) -> T:
    """Call ``fn`` until it succeeds; transient errors are retried with exponential backoff and full jitter
    (worst case with the defaults: about 20 s of sleeping in total)."""
    for attempt in range(1, max(1, tries) + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt >= tries or not _is_transient(exc):
                raise
            time.sleep(random.uniform(0.0, min(max_delay, base_delay * 2**attempt)))
    raise AssertionError("unreachable")


def _bounded_retry(uri: str) -> Callable[[Callable[[], T]], T]:
    """Our retries of one MLflow call: 10 with backoff for sqlite (a lock passes), none for a tracking server
    (MLflow's HTTP client retries each request, bounded by ``bound_http_requests``: tries multiply otherwise)."""
    tries = 10 if sqlite_db_path(uri) is not None else 1
    return lambda fn: _retry(fn, tries=tries)
