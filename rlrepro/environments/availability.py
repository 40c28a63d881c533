"""Which environment backends this machine has, checked without importing them (cheap, for DAG building)."""

from __future__ import annotations

import importlib.util

from rlrepro.environments.errors import BackendMissingError, UnsupportedSetupError

DMLAB_MESSAGE = (
    "DeepMind Lab is not installed (python module 'deepmind_lab'). It cannot be installed from the package "
    "registries: it is built from source with Bazel (github.com/google-deepmind/lab). Build it on a machine "
    "that allows that, install its Python package into this environment, and run this spec again."
)


FLOW_CONTROL_MESSAGE = (
    "The 2-D flow-control task (ReF-ER §5.4, App. D) needs the authors' CUDA Navier-Stokes solver "
    "(cselab/CubismUP_2D with smarties' apps/CUP2D_cylFollow): a C++/CUDA/MPI build with a GPU, which cannot be "
    "installed from the package registries and does not run on this CPU-only machine. Build it on a GPU machine, "
    "wire it in as an environment backend, and run this spec again."
)


def _missing_module(module: str, package: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"python module '{module}' is not installed: install '{package}' (pinned in envs/, `make install`)"
    return None


def missing_backend(env_spec: object) -> str | None:
    """A message naming the missing backend of ``env_spec``, or None when it can run here."""
    kind = getattr(env_spec, "kind", None)
    if kind == "dmlab" and importlib.util.find_spec("deepmind_lab") is None:
        return DMLAB_MESSAGE
    if kind == "atari":
        return _missing_module("ale_py", "ale-py") or _missing_module("cv2", "opencv-python-headless")
    if kind == "flow_control":
        return (f"{FLOW_CONTROL_MESSAGE} The spec asks for the {env_spec.solver} solver at Re "
                f"{env_spec.reynolds:g}, at most {env_spec.max_actions} actions per episode, "
                f"{env_spec.parallel_simulations} simulations per learner.")
    if kind == "mujoco":
        return _missing_module("mujoco", "mujoco") or _missing_module("imageio", "imageio")
    if kind == "gym_suite":
        return next((m for env in getattr(env_spec, "environments", []) if (m := missing_backend(env))), None)
    if kind == "gym":
        name = str(getattr(env_spec, "name", ""))
        if name.startswith("MiniGrid"):
            return _missing_module("minigrid", "minigrid")
        if name.startswith(("LunarLander", "BipedalWalker", "CarRacing")):
            return _missing_module("Box2D", "box2d")
        return _missing_module("gymnasium", "gymnasium")
    return None


def require_backend(env_spec: object) -> None:
    """Raise :class:`BackendMissingError` at once when the backend is missing."""
    if reason := missing_backend(env_spec):
        raise BackendMissingError(f"environment '{getattr(env_spec, 'id', '?')}': {reason}")


def require_mujoco(env_spec: object, agent_name: str) -> None:
    """The ReF-ER paper's agents train on MuJoCo tasks only: the backend must be there and the kind must be mujoco."""
    require_backend(env_spec)
    if env_spec.kind != "mujoco":
        raise UnsupportedSetupError(f"{agent_name} on '{env_spec.kind}' environments is not implemented (use kind: mujoco)")
