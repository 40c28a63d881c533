"""Trivial-policy scores: the return of doing nothing useful, per environment and evaluation protocol.

A claim is only as good as its contrast with doing nothing (verdicts issue, item 2). For every environment the
specs use, ``rlrepro trivial-scores`` measures (``rlrepro.environments.trivial``, with the environments' own code)

- ``uniform_random``: actions uniform over the action set the agent uses (Atari: the spec's minimal or full set;
  MuJoCo: uniform in the action box);
- ``noop``: always action 0 (discrete actions; NOOP in Atari, 'left' in Catch);
- ``zero_action``: the zero vector (continuous actions, clipped to the box like the agent's),

and writes one row per (protocol, policy) to ``rlrepro/data/trivial_policy_scores.csv`` with its provenance: the
command that measured it, the episodes, the commit, the date and the backend versions. No number is typed by hand.

The protocol key names what the score depends on and nothing else: the environment and its arguments, the episode
limit and, for Atari, the evaluation protocol (frame skip, sticky actions, no-op starts, frame cap, action set, FIRE
on reset). Observation processing (resolution, grey-scale, frame stack, max-pooling) and training-only settings
(life loss as terminal, environments per actor, the agent's evaluation epsilon and episode count) do not change what
a trivial policy scores, so they are not in the key. When a spec changes a field that is in the key, the stored row
no longer matches and :func:`trivial_scores` raises :class:`TrivialScoresMissing` with the command that re-measures.

Intervals: ``low``/``high`` are the 95% Student-t interval of the mean over episodes (df = episodes - 1); a sample
with no spread (a deterministic policy in a deterministic emulator: Atari NOOP without sticky actions) gives
``low == high == mean`` and says so in ``interval``. This module needs numpy and the standard library only.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

POLICIES: tuple[str, ...] = ("uniform_random", "noop", "zero_action")
CSV_NAME = "trivial_policy_scores.csv"
CSV_PATH = Path(__file__).resolve().parent.parent / "data" / CSV_NAME
# Bump when the measuring code changes in a way that changes scores: every row then reads as stale.
MEASURE_VERSION = 1
#: Episodes (Atari: games) a trivial level needs (issue 46): from 2-3 games a random policy's 95% interval spans a
#: large part of a game's scores (Video Pinball: mean 14,097, upper end 46,940), so a bar cannot be told from it.
#: ``rlrepro trivial-scores`` re-measures shorter rows; ``above_trivial`` is not judged against them.
MIN_EPISODES = 30

COLUMNS: tuple[str, ...] = (
    "protocol_key",
    "kind",
    "env",
    "policy",
    "status",
    "mean",
    "sd",
    "episodes",
    "low",
    "high",
    "interval",
    "mean_steps",
    "reason",
    "protocol",
    "command",
    "commit",
    "date",
    "versions",
    "seconds",
    "scores",
)

# Kinds that cannot be measured here, and why (a row with status 'not_measurable' records it for each env).
NOT_MEASURABLE: dict[str, str] = {
    "dmlab": "DeepMind Lab cannot be installed from the package registries (no backend on this machine)",
    "flow_control": "the swimmer task needs the authors' CUDA Navier-Stokes solver (CubismUP_2D), not installable here",
}
# Environments with no policy to compare: the trivial level is not defined.
NO_POLICY: dict[str, str] = {
    "random_walk": "a prediction task (one action; the walk moves left or right with probability 1/2 whatever the "
    "agent does): the claims are about value error, there is no policy and no trivial level",
}


class TrivialScoresError(LookupError):
    """Trivial-policy scores cannot be given for an environment (the message says which, why and what to run)."""


class TrivialScoresMissing(TrivialScoresError):
    """No stored row for this environment under this protocol (never measured, or its protocol changed)."""


class TrivialScoresUnavailable(TrivialScoresError):
    """The environment cannot be measured here (DMLab, flow control) or has no policy (the random walk)."""


@dataclass(frozen=True)
class TrivialScore:
    """One trivial policy's mean undiscounted episode return under one protocol, with its provenance.

    ``low``/``high``: the 95% Student-t interval of the mean over ``episodes`` (``interval`` names the method).
    ``scores``: each episode's return, in order (empty in rows measured before they were kept): what a claim of kind
    ``above_trivial`` tests a run's evaluation games against.
    """

    policy: str
    mean: float
    sd: float
    episodes: int
    low: float
    high: float
    protocol: str
    command: str
    commit: str
    date: str
    interval: str = "student_t_95"
    scores: tuple[float, ...] = ()


# --- protocol -----------------------------------------------------------------------------------------------


def _dump(env_spec: Any) -> dict[str, Any]:
    if hasattr(env_spec, "model_dump"):
        return env_spec.model_dump(mode="json")
    return dict(env_spec)


def env_name(env_spec: Any) -> str:
    """The environment's own name: Atari game, gymnasium id, JAX name, DMLab level, flow solver."""
    d = _dump(env_spec)
    if d.get("kind") == "gym_suite":
        protocol_fields(env_spec)  # raises: a suite has no single score
    for field in ("game", "name", "level", "solver"):
        if field in d:
            return str(d[field])
    raise TrivialScoresError(f"environment {d.get('id', d)!r} of kind {d.get('kind')!r} has no name field")


def protocol_fields(env_spec: Any, policy: str | None = None) -> dict[str, Any]:
    """What a trivial policy's score depends on (see the module docstring for what is left out and why).

    ``policy`` narrows it: Atari NOOP does not depend on the action set (action 0 is NOOP in the minimal and the
    full set of every one of the 57 games; ``tests/environments/test_trivial_atari.py`` checks it), so one NOOP
    row serves both sets.
    """
    d = _dump(env_spec)
    kind = d.get("kind")
    if kind == "jax":
        fields = {"name": d["name"], "kwargs": d.get("kwargs", {})}
    elif kind in ("gym", "mujoco"):
        fields = {"name": d["name"], "kwargs": d.get("kwargs", {}), "max_episode_steps": d.get("max_episode_steps")}
    elif kind == "atari":
        fields = {
            "game": d["game"],
            "mode": "evaluation: whole games (no life-loss ends)",
            "action_repeat": d["action_repeat"],
            "sticky_action_prob": d["sticky_action_prob"],
            "noop_max": d["evaluation"]["noop_max"],
            "max_episode_frames": d["max_episode_frames"],
            "action_set": d["action_set"],
            "fire_reset": d["fire_reset"],
        }
        if policy == "noop":
            del fields["action_set"]
            fields["action"] = "0 (NOOP in the minimal and the full action set)"
    elif kind == "dmlab":
        fields = {"level": d["level"], "action_repeat": d["action_repeat"]}
    elif kind == "flow_control":
        fields = {"solver": d["solver"], "reynolds": d["reynolds"], "max_actions": d["max_actions"]}
    elif kind == "gym_suite":
        raise TrivialScoresError(
            f"environment {d.get('id')!r} is a gym_suite: its members have trivial scores, the suite has none "
            "(ask for each member of `environments`)"
        )
    else:
        raise TrivialScoresError(f"environment {d.get('id')!r}: unknown kind {kind!r}")
    return {"kind": kind, **fields, "measure_version": MEASURE_VERSION}


def protocol_json(env_spec: Any, policy: str | None = None) -> str:
    """The protocol fields as canonical JSON (sorted keys, no spaces): what the CSV stores."""
    return json.dumps(protocol_fields(env_spec, policy), sort_keys=True, separators=(",", ":"))


def protocol_key(env_spec: Any, policy: str | None = None) -> str:
    """Stable identity of what is measured: ``kind:name:<12 hex of sha256(protocol JSON)>``.

    Changes whenever a field of :func:`protocol_fields` changes, so a row measured under another protocol is stale.
    """
    fields = protocol_fields(env_spec, policy)
    digest = hashlib.sha256(protocol_json(env_spec, policy).encode("utf-8")).hexdigest()[:12]
    return f"{fields['kind']}:{env_name(env_spec)}:{digest}"


def policies_for(env_spec: Any) -> tuple[str, ...]:
    """The trivial policies measured for an environment: continuous actions get zero_action, discrete noop."""
    return ("uniform_random", "zero_action") if _dump(env_spec).get("kind") == "mujoco" else ("uniform_random", "noop")


def unavailable_reason(env_spec: Any) -> str | None:
    """Why an environment has no trivial scores (not measurable here, or no policy), else None."""
    d = _dump(env_spec)
    if d.get("kind") in NOT_MEASURABLE:
        return NOT_MEASURABLE[d["kind"]]
    if d.get("kind") == "jax" and d.get("name") in NO_POLICY:
        return NO_POLICY[d["name"]]
    return None


def measure_command(env_spec: Any, spec_path: str | Path | None = None) -> str:
    """The command that measures this environment's missing rows."""
    where = f" --spec {spec_path}" if spec_path else ""
    return f"rlrepro trivial-scores{where} --env {env_name(env_spec)}"


# --- storage ------------------------------------------------------------------------------------------------


def _float(text: str) -> float:
    return float(text) if text not in ("", None) else math.nan


def read_rows(path: str | Path | None = None) -> list[dict[str, str]]:
    """The CSV's rows as dicts (empty when the file does not exist yet); the caller may change them."""
    path = Path(path) if path is not None else CSV_PATH
    if not path.exists():
        return []
    stat = path.stat()
    return [dict(row) for row in _parsed(str(path.resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)]


@functools.lru_cache(maxsize=8)
def _parsed(path: str, inode: int, mtime_ns: int, size: int) -> tuple[dict[str, str], ...]:
    """One parse per version of the file (validation asks once per threshold claim; a rewrite, atomic by rename,
    changes the key)."""
    del inode, mtime_ns, size  # part of the cache key only
    with open(path, newline="", encoding="utf-8") as f:
        return tuple(csv.DictReader(f))


def write_rows(rows: Iterable[Mapping[str, Any]], path: str | Path | None = None) -> None:
    """Write all rows atomically (a temporary file renamed over the CSV), sorted by kind, env, key and policy."""
    path = Path(path) if path is not None else CSV_PATH
    ordered = sorted(rows, key=lambda r: (str(r["kind"]), str(r["env"]), str(r["protocol_key"]), str(r["policy"])))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in ordered:
            writer.writerow({c: row.get(c, "") for c in COLUMNS})
    os.replace(tmp, path)


def _score(row: Mapping[str, str]) -> TrivialScore:
    return TrivialScore(
        policy=row["policy"],
        mean=_float(row["mean"]),
        sd=_float(row["sd"]),
        episodes=int(row["episodes"]),
        low=_float(row["low"]),
        high=_float(row["high"]),
        protocol=row["protocol"],
        command=row["command"],
        commit=row["commit"],
        date=row["date"],
        interval=row["interval"],
        scores=tuple(float(x) for x in json.loads(row.get("scores") or "[]")),
    )


def trivial_scores(env_spec: Any, path: str | Path | None = None) -> dict[str, TrivialScore]:
    """The stored trivial-policy scores of ``env_spec`` under its protocol, by policy.

    Raises:
      TrivialScoresUnavailable: the environment cannot be measured here (DMLab, flow control) or has no policy.
      TrivialScoresMissing: no row for this protocol (never measured, or the protocol changed: the message names
        the protocol, any stale rows of the same environment and the command to run).
    """
    name, kind = env_name(env_spec), _dump(env_spec).get("kind")
    reason = unavailable_reason(env_spec)
    if reason is not None:
        raise TrivialScoresUnavailable(f"no trivial-policy scores for {kind} environment {name!r}: {reason}")
    key, protocol = protocol_key(env_spec), protocol_json(env_spec)
    rows = read_rows(path)
    wanted = {policy: protocol_key(env_spec, policy) for policy in policies_for(env_spec)}
    found = {r["policy"]: _score(r) for r in rows
             if r["status"] == "measured" and wanted.get(r["policy"]) == r["protocol_key"]}
    if set(found) == set(wanted):
        return found
    stale = sorted({r["protocol"] for r in rows
                    if r["kind"] == kind and r["env"] == name and r["protocol_key"] not in wanted.values()})
    detail = f"; rows of {name!r} exist under other protocols (stale or another scale's): {'; '.join(stale)}" if stale else ""
    lacking = ", ".join(p for p in wanted if p not in found)
    raise TrivialScoresMissing(
        f"no trivial-policy scores ({lacking}) for {kind} environment {name!r} under protocol {protocol} "
        f"(key {key}) in {Path(path) if path is not None else CSV_PATH}{detail}. "
        f"Measure them with: {measure_command(env_spec)}"
    )


def trivial_level(env_spec: Any, path: str | Path | None = None) -> TrivialScore:
    """The best trivial policy by the upper end of its 95% interval (``high``): the do-nothing level a bar must clear.

    A bar inside a trivial policy's interval cannot be told from it, whatever its mean (issue 46), so bars are flagged
    against ``high``, not ``mean``."""
    scores = trivial_scores(env_spec, path)
    return max(scores.values(), key=lambda s: (s.high, s.mean, s.policy))


def too_few_episodes(env_spec: Any, score: TrivialScore) -> str:
    """'' when ``score`` rests on at least ``MIN_EPISODES`` episodes, else what it rests on and the command that
    measures it again, longer."""
    if score.episodes >= MIN_EPISODES:
        return ""
    return (f"only {score.episodes} episode(s) of {score.policy}, fewer than the {MIN_EPISODES} a level needs: "
            f"{measure_command(env_spec)}")


def score_row(env_spec: Any, score: TrivialScore, **extra: Any) -> dict[str, Any]:
    """A CSV row for one measured score (``extra``: mean_steps, versions, seconds)."""
    row = {
        "protocol_key": protocol_key(env_spec, score.policy),
        "kind": _dump(env_spec)["kind"],
        "env": env_name(env_spec),
        "status": "measured",
        "reason": "",
        **dataclasses.asdict(score),
        **extra,
        "protocol": protocol_json(env_spec, score.policy),  # the environment's, whatever the score says
    }
    for field in ("mean", "sd", "low", "high"):
        row[field] = repr(float(row[field]))
    row["scores"] = json.dumps([float(x) for x in score.scores], separators=(",", ":"))
    return row


def unavailable_row(env_spec: Any, command: str, commit: str, date: str) -> dict[str, Any]:
    """A CSV row recording that an environment has no trivial scores, and why."""
    return {
        "protocol_key": protocol_key(env_spec),
        "kind": _dump(env_spec)["kind"],
        "env": env_name(env_spec),
        "policy": "",
        "status": "not_measurable" if _dump(env_spec)["kind"] in NOT_MEASURABLE else "no_policy",
        "reason": unavailable_reason(env_spec),
        "protocol": protocol_json(env_spec),
        "command": command,
        "commit": commit,
        "date": date,
    }
