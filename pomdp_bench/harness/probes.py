"""Memory probes: can the cue be read, linearly, from what a trained agent's heads read?

For a cue task (:mod:`~pomdp_bench.harness.cue_tasks`: T-Maze's junction, cue recall's
query) the agent acts deterministically on fresh episodes, and at the decision step,
and at 25%, 50% and 75% of the way there, the output of its memory trunk
(:class:`~pomdp_bench.agents.common.networks.Trunk`: what its heads read) is recorded.
A cross-validated logistic regression (scikit-learn, the ``probes`` extra) then says how
well that output names the episode's cue. Chance is ``1 / n_cues``.

A run that fails the task then falls in one of three classes (:func:`~pomdp_bench.harness.analysis_records.failure_class`):
it *lost the cue* (the probe is at chance), it *kept the cue but did not use it* (the
probe reads it, the return stays at the ceiling), or *other*.

The probe reads what the heads read, so the observation too where it reaches them (a
``none`` memory passes it on). On T-Maze a memoryless policy that stalls on one cue and
walks on the other keeps the cue in its position, and the probe at the junction reads it
there: ``kept_cue_unused`` then names a cue the env state held, not the memory.

Any agent whose acting step runs a memory block gets probes, found among its modules
(:func:`memory_blocks`: a ``Trunk``, or a module with an ``encoder`` and a ``memory``, as
PQN's network), so an agent added later needs no change here. Nothing is trained but the probe: the agent
is a stored run's final weights (``ResultStore.load_agent``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from pomdp_bench.agents.common.networks import Trunk
from pomdp_bench.agents.common.seeding import env_seeds
from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.harness.analysis_records import ProbeResult  # what probes store, read by reporting too
from pomdp_bench.harness.cue_tasks import CueTask
from pomdp_bench.memory.base import Memory

PROBE_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
"""Where the probes look, as shares of the way from the cue (step 0) to the decision."""

PROBE_SEED = 2**40
"""Root of the probe episodes' reset seeds (split by ``env_seeds(PROBE_SEED, "evaluate",
n)``): far above any run's agent seed, so no run trained or was evaluated on them."""

DEFAULT_EPISODES = 256
"""Fresh episodes a probe fits and tests on (cross-validated)."""

DEFAULT_FOLDS = 5

_MAX_COPIES = 256  # copies stepped together while collecting


def probe_steps(horizon: int, fractions: tuple[float, ...] = PROBE_FRACTIONS) -> list[int]:
    """The steps the probes look at: ``fraction * horizon`` rounded half up, for each
    fraction (steps since the cue; the last is the decision step at fraction 1)."""
    return [math.floor(f * horizon + 0.5) for f in fractions]


class TrunkRecorder:
    """Records what an agent's heads read, one policy call at a time.

    Inside ``with TrunkRecorder(agent) as recorder:``, every memory block among the
    agent's modules (:func:`memory_blocks`) is hooked; after each call of the agent's
    policy (``predict``), :meth:`take` returns the output of the first block that ran in
    it (the actor's, or the Q network's), or, for a memory skipped as ``none`` (DQN's and
    PQN's shortcut around an identity memory), its encoder's output, which is what
    ``none`` outputs.

    Raises:
        ValueError: (on entering) the agent has no memory block: it keeps its memory
            elsewhere (e.g. the sb3-contrib adapter), so there is nothing to read.
    """

    def __init__(self, agent: Any) -> None:
        self.trunks = memory_blocks(agent)
        if not self.trunks:
            raise ValueError(
                f"agent {type(agent).__name__} has no memory block to probe (a Trunk, or a module with an encoder and a memory)"
            )
        self._seen: list[tuple[int, torch.Tensor]] = []  # (0 trunk / 1 encoder, output [1, B, H])
        self._handles: list[Any] = []

    def __enter__(self) -> TrunkRecorder:
        def on_trunk(_module: nn.Module, _inputs: Any, output: Any) -> None:
            self._seen.append((0, output[0].detach()))

        def on_encoder(_module: nn.Module, _inputs: Any, output: Any) -> None:
            self._seen.append((1, output.detach()))

        self._handles = [reader.register_forward_hook(on_trunk) for reader, _ in self.trunks]
        self._handles += [encoder.register_forward_hook(on_encoder) for _, encoder in self.trunks]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def take(self) -> torch.Tensor:
        """What the heads read in the last policy call, ``[B, H]``; forgets it.

        Raises:
            ValueError: no trunk ran since the last :meth:`take`.
        """
        if not self._seen:
            raise ValueError("the agent's policy step ran no memory trunk")
        kind = min(k for k, _ in self._seen)  # a trunk's output wins over an encoder's
        output = next(o for k, o in self._seen if k == kind)
        self._seen.clear()
        return output[0] if output.dim() == 3 else output  # one step: [1, B, H] -> [B, H]


def memory_blocks(agent: Any) -> list[tuple[nn.Module, nn.Module]]:
    """Every memory block inside the agent's modules, each once, as ``(reader, encoder)``:
    the module whose output (``(features [T, B, H], state)``) the heads read, and the
    encoder before the memory.

    A :class:`~pomdp_bench.agents.common.networks.Trunk` is its own reader (its output
    includes the encoder's skip where it has one). Any other module with an ``encoder``
    and a ``memory`` that is a :class:`~pomdp_bench.memory.base.Memory` (PQN's network,
    whose head reads the memory's output) gives that memory as the reader.
    """
    found: dict[int, tuple[nn.Module, nn.Module]] = {}
    inside: set[int] = set()  # memories that a Trunk already reads through
    for value in vars(agent).values():
        if not isinstance(value, nn.Module):
            continue
        for module in value.modules():
            if isinstance(module, Trunk):
                found.setdefault(id(module), (module, module.encoder))
                inside.add(id(module.memory))
    for value in vars(agent).values():
        if not isinstance(value, nn.Module):
            continue
        for module in value.modules():
            memory, encoder = getattr(module, "memory", None), getattr(module, "encoder", None)
            if isinstance(memory, Memory) and isinstance(encoder, nn.Module) and id(memory) not in inside:
                found.setdefault(id(memory), (memory, encoder))
    return list(found.values())


def trunks_of(agent: Any) -> list[nn.Module]:
    """The readers of :func:`memory_blocks`: what the agent's heads read from, each once."""
    return [reader for reader, _ in memory_blocks(agent)]


def collect_features(
    agent: Any,
    task: CueTask,
    steps: list[int],
    n_episodes: int = DEFAULT_EPISODES,
    seed: int = PROBE_SEED,
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """What the agent's heads read at ``steps`` of ``n_episodes`` fresh episodes.

    The agent acts deterministically from a fresh memory, as in evaluation. Episode
    ``i`` resets from the ``i``-th seed of ``env_seeds(seed, "evaluate", n_episodes)``.

    Args:
        agent: a trained agent (``predict``, and a memory block among its modules).
        task: the env variant (its bare env, no wrappers).
        steps: steps since the cue, each in ``[0, task.horizon]``.
        n_episodes: episodes, at least 2.
        seed: root of the reset seeds.

    Returns:
        ``({step: features [n_episodes, H] float32}, cues [n_episodes] int64)``.

    Raises:
        ValueError: a step outside ``[0, task.horizon]``, fewer than 2 episodes, or an
            agent without a memory block.
    """
    if n_episodes < 2:
        raise ValueError(f"n_episodes must be >= 2, got {n_episodes!r}")
    bad = [s for s in steps if not 0 <= s <= task.horizon]
    if bad:
        raise ValueError(f"probe steps {bad} lie outside [0, {task.horizon}] (the cue to the decision)")
    seeds = env_seeds(seed, "evaluate", n_episodes)
    wanted = set(steps)
    features: dict[int, list[np.ndarray]] = {s: [] for s in wanted}
    cues: list[np.ndarray] = []
    for first in range(0, n_episodes, _MAX_COPIES):
        batch = seeds[first : first + _MAX_COPIES]
        env = make_vector_env(task.env_id, len(batch), **task.env_kwargs)
        try:
            obs, _ = env.reset(seed=batch)
            cues.append(task.cues(obs))
            state = None
            starts = np.ones(len(batch), dtype=bool)
            with TrunkRecorder(agent) as recorder:
                for t in range(max(wanted) + 1):
                    action, state = agent.predict(obs, state, starts, deterministic=True)
                    read = recorder.take()
                    if t in wanted:
                        features[t].append(read.float().cpu().numpy())
                    if t < max(wanted):
                        obs, *_ = env.step(action)
                        starts = np.zeros(len(batch), dtype=bool)  # fixed-length: no episode ends yet
        finally:
            env.close()
    return {s: np.concatenate(f) for s, f in features.items()}, np.concatenate(cues)


def probe_accuracy(
    features: np.ndarray, labels: np.ndarray, folds: int = DEFAULT_FOLDS, seed: int = 0
) -> float:
    """Cross-validated accuracy of a linear probe from ``features`` to ``labels``.

    A logistic regression on standardised features (scikit-learn), scored on held-out
    folds of a stratified, shuffled ``folds``-fold split (``random_state=seed``): the
    mean accuracy over the folds. Deterministic for the same input.

    Args:
        features: ``[N, H]`` (or ``[N]``) numbers.
        labels: ``[N]`` class labels.
        folds: folds of the split, at least 2 (fewer where the rarest class is rarer).
        seed: the split's shuffle seed.

    Returns:
        Accuracy in ``[0, 1]``; the share of the most common label where every feature
        is constant (nothing to read); NaN where only one class occurs.

    Raises:
        ImportError: scikit-learn is missing (install the ``probes`` extra).
        ValueError: ``features`` and ``labels`` differ in length, or ``folds < 2``.
    """
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_val_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError as err:  # an optional extra
        raise ImportError("memory probes need scikit-learn: pip install 'pomdp-bench[probes]'") from err
    x = np.asarray(features, dtype=np.float64)
    x = x.reshape(len(x), -1)
    y = np.asarray(labels)
    if len(x) != len(y):
        raise ValueError(f"features hold {len(x)} rows but labels {len(y)}")
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds!r}")
    _, counts = np.unique(y, return_counts=True)
    if len(counts) < 2:
        return math.nan
    splits = min(folds, int(counts.min()))
    if splits < 2:
        return math.nan
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    split = StratifiedKFold(n_splits=splits, shuffle=True, random_state=seed)
    return float(cross_val_score(model, x, y, cv=split, scoring="accuracy").mean())


def probe_agent(
    agent: Any,
    task: CueTask,
    n_episodes: int = DEFAULT_EPISODES,
    seed: int = PROBE_SEED,
    fractions: tuple[float, ...] = PROBE_FRACTIONS,
    folds: int = DEFAULT_FOLDS,
) -> ProbeResult:
    """Probe ``agent`` on ``task`` at each of ``fractions`` of the horizon
    (:func:`collect_features`, then :func:`probe_accuracy` per step)."""
    steps = probe_steps(task.horizon, fractions)
    features, cues = collect_features(agent, task, steps, n_episodes, seed)
    return ProbeResult(
        steps=steps,
        fractions=list(fractions),
        accuracies=[probe_accuracy(features[s], cues, folds=folds) for s in steps],
        chance=task.chance,
        n_episodes=n_episodes,
        seed=seed,
    )
