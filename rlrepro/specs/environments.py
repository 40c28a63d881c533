"""Environment specs: one model per backend, selected by ``kind``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from rlrepro.specs.common import Name, PositiveCount, SpecModel


class ScoredEnvSpec(SpecModel):
    """Reference scores of an environment, used by the claim verdicts (not by training).

    ``random_score`` makes threshold claims that a uniform-random policy already passes an error unless
    marked uninformative, and with ``return_range`` normalises scores, (x - random) / (high - random), for
    claims over an aggregate of environments. Every seed at the floor or ceiling of ``return_range`` on both
    sides makes a comparison inconclusive (two methods stuck at the floor do not "match").
    """

    random_score: float | None = Field(
        None,
        description="Mean return of a uniform-random policy (give its provenance in a comment). Atari games take "
        "it from the human/random table instead.",
    )
    return_range: tuple[float, float] | None = Field(
        None,
        description="[low, high]: floor and ceiling of the return (Evolving RL normalises returns with it: "
        "CartPole-v0 [0, 200], MiniGrid [0, 1]).",
    )

    @model_validator(mode="after")
    def _check_scores(self) -> "ScoredEnvSpec":
        if self.return_range is not None:
            low, high = self.return_range
            if not low < high:
                raise ValueError(f"return_range must be [low, high] with low < high; got {list(self.return_range)}")
            if self.random_score is not None and not low <= self.random_score <= high:
                raise ValueError(f"random_score {self.random_score} lies outside return_range {list(self.return_range)}")
        return self


class JaxEnvSpec(ScoredEnvSpec):
    """A pure-JAX environment of ``rlrepro.environments.jax_envs`` (whole runs jit and vmap over seeds)."""

    kind: Literal["jax"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    name: Literal["catch", "cartpole", "random_walk", "chain", "catch_runs", "key_to_door"] = Field(description="Environment in rlrepro.environments.jax_envs.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Constructor arguments (e.g. rows, columns).")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per agent step (no action repeat for toy tasks).")


class DmlabEnvSpec(ScoredEnvSpec):
    """A DeepMind Lab level. DeepMind Lab cannot be installed from the package registries: such runs fail at once."""

    kind: Literal["dmlab"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    level: str = Field(description="DeepMind Lab level name, e.g. rooms_watermaze or contributed/dmlab30/...")
    action_repeat: int = Field(4, ge=1, description="Action repetitions (Table D.3: 4).")
    width: int = Field(96, ge=1, description="Observation width (Table D.3: 96).")
    height: int = Field(72, ge=1, description="Observation height (Table D.3: 72).")

    @property
    def frames_per_step(self) -> int:
        return self.action_repeat


class AtariEvalSpec(SpecModel):
    """Evaluation episodes, separate from training (IMPALA section 5.3.2: 200 episodes, up to 30 no-ops)."""

    episodes: PositiveCount = Field(200, description="Evaluation episodes per run (200 in IMPALA at paper scale).")
    noop_max: int = Field(30, ge=0, description="Up to this many no-op actions at the start of each episode.")
    epsilon: float = Field(0.0, ge=0, le=1, description="Epsilon-greedy exploration during evaluation (DQN: 0.001).")


class AtariEnvSpec(ScoredEnvSpec):
    """An Atari 2600 game through gymnasium + ale-py; every protocol setting is stated here, not in code."""

    kind: Literal["atari"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables, e.g. pong.")
    game: str = Field(description="ALE game id in snake_case, e.g. pong, breakout, space_invaders.")
    action_repeat: int = Field(4, ge=1, description="Frames per agent step (Table G.1: 4).")
    max_pool_frames: int = Field(
        2,
        ge=1,
        description=(
            "Max-pool over the last N repeated frames (Table G.1: 2): 1 (no pooling) or 2, what ale-py's vector "
            "environment implements; 3 and 4 are rejected."
        ),
    )
    resolution: int = Field(84, ge=8, description="Square observation size after resizing (Table G.1: 84).")
    grayscale: bool = Field(True, description="Grey-scale observations (Table G.1: yes).")
    frame_stack: int = Field(4, ge=1, description="Stacked frames per observation (Table G.1: 4).")
    noop_max: int = Field(30, ge=0, description="Up to this many no-ops at the start of a training episode.")
    sticky_action_prob: float = Field(
        0.0, ge=0, le=1, description="Sticky actions (0: the deterministic pre-2018 protocol; ale-py v5 defaults to 0.25)."
    )
    life_loss_terminal: bool = Field(True, description="End of episode when a life is lost, in training only (Table G.1).")
    max_episode_frames: int = Field(
        108_000, ge=1, description="Episode cap in frames (30 minutes; an assumption the IMPALA paper does not state)."
    )
    action_set: Literal["minimal", "full"] = Field("minimal", description="Game-specific minimal or all 18 actions.")
    fire_reset: bool = Field(
        False, description="Press FIRE after every reset (a common wrapper; not part of the IMPALA/DQN protocol)."
    )
    num_envs: PositiveCount = Field(32, description="Environments stepped in parallel by the actors.")
    evaluation: AtariEvalSpec = Field(default_factory=AtariEvalSpec, description="Evaluation protocol.")

    @field_validator("max_pool_frames")
    @classmethod
    def _pool_one_or_two(cls, value: int) -> int:
        if value > 2:
            raise ValueError(
                f"max_pool_frames {value} is not implemented: ale-py's vector environment max-pools the last 2 frames "
                "of each action repeat or none; use 2 (Table G.1) or 1"
            )
        return value

    @property
    def frames_per_step(self) -> int:
        return self.action_repeat


class GymEnvSpec(ScoredEnvSpec):
    """A gymnasium environment stepped on the host (classic control, Box2D, MiniGrid)."""

    kind: Literal["gym"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    name: str = Field(description="gymnasium id, e.g. CartPole-v1, LunarLander-v3, MiniGrid-Empty-5x5-v0.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments of gymnasium.make.")
    observation: Literal["default", "minigrid_fully_observed"] = Field(
        "default", description="Observation processing: as the environment gives it, or MiniGrid's full-grid encoding."
    )
    max_episode_steps: int | None = Field(None, ge=1, description="Time limit in steps (MiniGrid in the paper: 100).")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per agent step.")


class GymSuiteSpec(SpecModel):
    """Several gymnasium environments used together (a loss search's training set; the first is the hurdle)."""

    kind: Literal["gym_suite"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    environments: list[GymEnvSpec] = Field(min_length=1, description="Members, the hurdle environment first.")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per step (unused by searches, which count programs).")


class MujocoEnvSpec(ScoredEnvSpec):
    """A gymnasium MuJoCo task (``mujoco`` bindings), stepped on the host with continuous actions.

    ReF-ER (Novati & Koumoutsakos 2019) ran gym v2 on mujoco-py; gymnasium v5 differs on several tasks, so the
    spec names the paper's id and what changed (notes §7.1, ``refer_tasks.csv``). ``random_score`` null: the
    pipeline measures R_random (uniform-random episodes) and caches it with provenance beside the runs.
    """

    kind: Literal["mujoco"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    name: str = Field(pattern=r"^[A-Za-z0-9]+-v[45]$", description="gymnasium id with its version, e.g. HalfCheetah-v5.")
    paper_name: str = Field(description="The paper's environment id (gym v2, mujoco-py), e.g. HalfCheetah-v2.")
    changes_from_paper: str = Field(
        min_length=1, description="What differs from the paper's version (dynamics, reward, observation); 'none' if nothing."
    )
    comparable_to_paper: bool = Field(
        description="Whether absolute returns may be compared with the paper's curves (no dynamics/reward change)."
    )
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments of gymnasium.make.")
    max_episode_steps: int | None = Field(None, ge=1, description="Time limit in steps (null: the task's own, 1000).")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per agent step (no action repeat).")

    @property
    def version(self) -> str:
        """The gymnasium version suffix, e.g. v5."""
        return self.name.rsplit("-", 1)[1]


class FlowControlEnvSpec(SpecModel):
    """The 2-D swimmer-in-a-cylinder-wake task (ReF-ER §5.4, App. D): needs the authors' CUDA Navier-Stokes solver.

    It cannot be installed from the package registries: such runs fail at once with a clear message.
    """

    kind: Literal["flow_control"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    solver: Literal["cubismup_2d"] = Field(description="The flow solver (cselab/CubismUP_2D, CUDA + OpenMP + MPI).")
    reynolds: float = Field(400.0, gt=0, description="Re = D^2/(nu T) (App. D: 400).")
    max_actions: PositiveCount = Field(400, description="Actions per episode (App. D: at most 400).")
    parallel_simulations: PositiveCount = Field(24, description="Simulations feeding one learner (App. D: 24).")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per agent step.")


EnvSpec = Annotated[
    Union[JaxEnvSpec, DmlabEnvSpec, AtariEnvSpec, GymEnvSpec, GymSuiteSpec, MujocoEnvSpec, FlowControlEnvSpec],
    Field(discriminator="kind"),
]
ENV_KINDS: tuple[str, ...] = ("jax", "dmlab", "atari", "gym", "gym_suite", "mujoco", "flow_control")
