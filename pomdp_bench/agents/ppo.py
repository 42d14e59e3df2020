"""Recurrent PPO (clip), for every memory kind, checked against sb3-contrib's RecurrentPPO.

The algorithm reads top to bottom in :meth:`PPO.learn`: collect a rollout with
the memory running (:meth:`PPO._collect_rollout`), compute GAE, then train on
whole bptt pieces of it (:meth:`PPO._update`), the loss next to its data.

Semantics (see docs/DESIGN.md, "Semantics that are easy to get wrong"):

- The memory resets inside the forward pass where ``terminated or truncated``
  ended the previous step. GAE stops bootstrapping at ``terminated`` only: where
  a time limit truncated an episode, it bootstraps on the critic's value of the
  final observation, read from the memory that episode built (the critic runs
  one step on the final observation from its pre-reset state), as sb3-contrib
  does.
- Each copy's rollout is cut into pieces of ``bptt_length`` steps; whole pieces
  are shuffled into minibatches. A piece starts from the memories the policy
  had at its first step while collecting (stored then), and no gradient flows
  back past a piece's start. Advantages are normalised per minibatch, in the
  loss.
- ``memory=None`` is plain feedforward PPO through the same code.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from tqdm.auto import tqdm

from pomdp_bench.agents.evaluation import evaluate_episodes
from pomdp_bench.agents.flat_parameters import FlatAdam, FlatParameters
from pomdp_bench.agents.networks import (
    ActorCritic,
    ActorCriticState,
    NetArch,
    state_from_numpy,
    state_to_numpy,
)
from pomdp_bench.agents.normalization import Normalizer
from pomdp_bench.agents.rollout_buffer import Minibatch, RecurrentRolloutBuffer, check_bptt_length
from pomdp_bench.agents.schedules import ScheduleLike, as_schedule, schedule_to_data
from pomdp_bench.agents.seeding import env_seeds
from pomdp_bench.envs.make import training_env
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.validation import check_float, check_int

_SAVE_FORMAT = 2  # 2: the optimiser holds one flat parameter
# Keys Gymnasium adds to a vector env's spec.kwargs that are not the env's own.


class PPO:
    """Proximal Policy Optimisation (clip) with an optional memory.

    Args:
        env: an env id (built with
            :func:`pomdp_bench.envs.make.make_vector_env` from ``env_kwargs``), or
            a Gymnasium vector env in ``SAME_STEP`` autoreset mode.
        memory: the memory block: ``None`` (feedforward), a kind name, a dict or
            a :class:`~pomdp_bench.memory.MemoryConfig`.
        env_kwargs: keyword arguments of the env, when ``env`` is an id.
        n_envs: copies stepped together; 8 for an id, the vector env's
            ``num_envs`` otherwise.
        n_steps: steps per copy in a rollout (``T``).
        num_minibatches: minibatches per epoch. Give this or ``batch_size``
            (SB3's meaning: steps per minibatch, dividing ``n_envs * n_steps``);
            4 when neither is given.
        batch_size: steps per minibatch, see ``num_minibatches``.
        n_epochs: passes over each rollout.
        gamma: discount factor.
        gae_lambda: GAE's lambda.
        clip_range: PPO's ratio clip, a number or schedule (``"lin_0.2"``).
        clip_range_vf: clip of the value change around the collected value
            (``None``: no clipping); depends on the reward scale.
        ent_coef: weight of the entropy bonus.
        vf_coef: weight of the value loss.
        max_grad_norm: gradients are clipped to this global norm.
        learning_rate: Adam's step size, a number or schedule (``"lin_1e-3"``
            decays linearly to 0 over ``learn``'s total_timesteps).
        normalize_observations: standardise observations by running
            statistics (SB3's ``VecNormalize``), clipped to ±10.
        normalize_rewards: scale rewards by the running standard deviation of the
            discounted return (SB3's ``VecNormalize``), clipped to ±10.
        bptt_length: steps per piece (``L``). ``None``: the longest pieces that
            cut every rollout into equal parts and split exactly into the
            minibatches (whole rollouts when ``n_envs % num_minibatches == 0``).
            An explicit value must divide that default.
        shared_memory: one encoder and memory for actor and critic (both losses
            train it) instead of one each.
        net_arch: hidden widths: a list for both heads, or a dict with ``pi``,
            ``vf`` (after the memory) and ``encoder`` (before it); ``None`` gives
            ``pi=vf=[64, 64]`` and no encoder.
        activation: activation of the MLPs (``"tanh"``, ``"relu"``, ...).
        ortho_init: SB3's orthogonal initialisation of the MLPs and heads.
        log_std_init: initial log standard deviation for Box actions.
        seed: seeds the networks, the env resets, the action sampling and the
            shuffles; the same seed gives the same learning curve on CPU.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ...

    Raises:
        ValueError: for settings that cannot work (e.g. a ``bptt_length`` that
            does not divide the default), with the valid values in the message.
    """

    def __init__(
        self,
        env: str | VectorEnv,
        memory: MemoryConfig | dict[str, Any] | str | None = None,
        *,
        env_kwargs: dict[str, Any] | None = None,
        n_envs: int | None = None,
        n_steps: int = 128,
        num_minibatches: int | None = None,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: ScheduleLike = 0.2,
        clip_range_vf: ScheduleLike | None = None,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        learning_rate: ScheduleLike = 3e-4,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        bptt_length: int | None = None,
        shared_memory: bool = False,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation: str = "tanh",
        ortho_init: bool = True,
        log_std_init: float = 0.0,
        seed: int = 0,
        device: str | torch.device = "auto",
    ) -> None:
        # -- the environment ----------------------------------------------------
        resolved = training_env(env, env_kwargs, n_envs, default_n_envs=8)
        self.env, self.env_id, self.env_kwargs = resolved.env, resolved.env_id, resolved.env_kwargs
        n_envs = self.n_envs = resolved.n_envs
        self.observation_space = self.env.single_observation_space
        if normalize_observations and not isinstance(self.observation_space, spaces.Box):
            raise ValueError(
                f"normalize_observations needs a Box observation space, got {self.observation_space}"
            )
        self.action_space = self.env.single_action_space
        if not isinstance(self.action_space, (spaces.Discrete, spaces.Box)):
            raise TypeError(f"action space {self.action_space} is not supported: use Discrete or Box")

        # -- settings -----------------------------------------------------------
        check_int("n_steps", n_steps, minimum=1)
        check_int("n_epochs", n_epochs, minimum=1)
        check_float("gamma", gamma, minimum=0.0, maximum=1.0)
        check_float("gae_lambda", gae_lambda, minimum=0.0, maximum=1.0)
        check_float("ent_coef", ent_coef)
        check_float("vf_coef", vf_coef, minimum=0.0)
        check_float("max_grad_norm", max_grad_norm, minimum=0.0, strict_minimum=True)
        if batch_size is not None:
            check_int("batch_size", batch_size, minimum=1)
        if num_minibatches is not None:
            check_int("num_minibatches", num_minibatches, minimum=1)
        rollout_size = n_envs * n_steps
        if num_minibatches is not None and batch_size is not None:
            raise ValueError("give num_minibatches or batch_size, not both")
        if batch_size is not None:
            if rollout_size % batch_size:
                valid = [d for d in range(1, rollout_size + 1) if rollout_size % d == 0]
                raise ValueError(
                    f"batch_size={batch_size} must divide the rollout, n_envs * n_steps = {rollout_size}; "
                    f"valid batch sizes: {valid}"
                )
            num_minibatches = rollout_size // batch_size
        num_minibatches = 4 if num_minibatches is None else num_minibatches
        if num_minibatches > rollout_size:
            raise ValueError(f"num_minibatches must be in [1, {rollout_size}], got {num_minibatches}")
        self.num_minibatches = num_minibatches
        self.bptt_length = check_bptt_length(bptt_length, n_envs, n_steps, num_minibatches)
        self.n_steps, self.n_epochs = n_steps, n_epochs
        self.gamma, self.gae_lambda = gamma, gae_lambda
        self.clip_range = as_schedule("clip_range", clip_range)
        self.clip_range_vf = None if clip_range_vf is None else as_schedule("clip_range_vf", clip_range_vf)
        self.learning_rate = as_schedule("learning_rate", learning_rate)
        self.ent_coef, self.vf_coef, self.max_grad_norm = ent_coef, vf_coef, max_grad_norm
        self.seed = seed
        self.memory_config = MemoryConfig.from_any(memory)
        self.device = torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if str(device) == "auto" else device
        )
        # Everything needed to rebuild this agent (save/load); plain data only.
        self._config: dict[str, Any] = dict(
            env=self.env_id,
            memory=self.memory_config.to_dict(),
            env_kwargs=self.env_kwargs,
            n_envs=n_envs,
            n_steps=n_steps,
            num_minibatches=num_minibatches,
            n_epochs=n_epochs,
            gamma=gamma,
            gae_lambda=gae_lambda,
            clip_range=schedule_to_data(self.clip_range),
            clip_range_vf=None if self.clip_range_vf is None else schedule_to_data(self.clip_range_vf),
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            learning_rate=schedule_to_data(self.learning_rate),
            normalize_observations=normalize_observations,
            normalize_rewards=normalize_rewards,
            bptt_length=self.bptt_length,
            shared_memory=shared_memory,
            net_arch=NetArch.parse(net_arch)._asdict(),
            activation=activation,
            ortho_init=ortho_init,
            log_std_init=log_std_init,
            seed=seed,
        )

        # -- networks, optimiser, buffer ----------------------------------------
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.policy = ActorCritic(
                self.observation_space,
                self.action_space,
                self.memory_config,
                NetArch.parse(net_arch),
                activation=activation,
                shared_memory=shared_memory,
                ortho_init=ortho_init,
                log_std_init=log_std_init,
            ).to(self.device)
        # One flat buffer for all parameters: zeroing, clipping and Adam are one op
        # each (see flat_parameters). eps 1e-5 as SB3's policies.
        self.flat_params = FlatParameters(self.policy)
        self.optimizer = FlatAdam(self.flat_params.param, lr=self.learning_rate(1.0), eps=1e-5)
        self.normalizer = Normalizer(
            self.observation_space.shape,
            n_envs,
            normalize_observations=normalize_observations,
            normalize_rewards=normalize_rewards,
            gamma=gamma,
        )
        self.buffer = RecurrentRolloutBuffer(
            n_steps,
            n_envs,
            self.observation_space.shape,
            torch.float32,
            self.action_space.shape,
            torch.long if isinstance(self.action_space, spaces.Discrete) else torch.float32,
            self.bptt_length,
            self.device,
        )
        self._act_generator = torch.Generator(device=self.device).manual_seed(seed)
        self._predict_generator = torch.Generator(device=self.device).manual_seed(seed + 2)
        self._shuffle_generator = torch.Generator().manual_seed(seed + 1)

        # -- training state -----------------------------------------------------
        self.num_timesteps = 0
        self.n_updates = 0
        self.history: list[dict[str, float]] = []  # one entry per update, see learn()
        self.episode_log: list[tuple[int, float, int]] = []  # (timesteps, return, length) per episode
        # gradient_reach[k]: training episodes whose last step's gradient reaches exactly k
        # steps back within its episode (the piece's start or the episode's, whichever is
        # later); k >= h means a cue h steps before the decision shares the decision's piece.
        self.gradient_reach = np.zeros(self.bptt_length, dtype=np.int64)
        self._recent_returns: collections.deque[float] = collections.deque(maxlen=100)
        self._obs: torch.Tensor | None = None  # next observation, normalised, [B, *obs_shape]

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Callable[[PPO], bool | None] | None = None,
    ) -> PPO:
        """Train for ``total_timesteps`` env steps (rounded up to whole rollouts).

        Args:
            total_timesteps: env steps, over all copies.
            progress_bar: show a tqdm bar.
            callback: called with the agent after every update; returning
                ``False`` stops training.

        After each update ``self.history`` gains a dict: ``timesteps``,
        ``mean_return`` (mean undiscounted return of the last 100 finished
        episodes, NaN before the first, like SB3's ``rollout/ep_rew_mean``),
        ``episodes``, the losses, ``approx_kl``, ``clip_fraction``,
        ``learning_rate``, ``clip_range`` and ``steps_per_second``.
        ``self.episode_log`` holds ``(timesteps, return, length)`` per episode, and
        ``self.gradient_reach [bptt_length]`` counts finished training episodes by how
        many steps back the gradient from their last step reaches within the episode
        (pieces are fixed windows of the rollout: a decision's gradient stops at its
        piece's start).

        Raises:
            FloatingPointError: a NaN or inf in a loss, gradient or parameter,
                naming the update.
        """
        start_timesteps = self.num_timesteps
        if self._obs is None:
            self._start_episodes()
        rollout_size = self.n_envs * self.n_steps
        n_rollouts = math.ceil(total_timesteps / rollout_size)
        bar = tqdm(total=n_rollouts * rollout_size, disable=not progress_bar, unit="step")
        t0, steps0 = time.perf_counter(), self.num_timesteps
        try:
            for _ in range(n_rollouts):
                self._collect_rollout()
                # SB3's progress: the fraction of the budget left after this rollout.
                progress_remaining = 1.0 - (self.num_timesteps - start_timesteps) / total_timesteps
                stats = self._update(max(progress_remaining, 0.0))
                stats["timesteps"] = self.num_timesteps
                stats["episodes"] = len(self.episode_log)
                stats["mean_return"] = (
                    float(np.mean(self._recent_returns)) if self._recent_returns else math.nan
                )
                stats["steps_per_second"] = (self.num_timesteps - steps0) / (time.perf_counter() - t0)
                self.history.append(stats)
                bar.update(rollout_size)
                bar.set_postfix(mean_return=f"{stats['mean_return']:.3g}")
                if callback is not None and callback(self) is False:
                    break
        finally:
            bar.close()
        return self

    def _start_episodes(self) -> None:
        obs, _ = self.env.reset(seed=env_seeds(self.seed, "train", self.n_envs))
        self.normalizer.reset_returns()
        self._obs = self._obs_tensor(self.normalizer.obs(obs, update=True))
        self._state = self.policy.initial_state(self.n_envs, self.device)
        self._episode_starts = torch.ones(self.n_envs, dtype=torch.bool, device=self.device)
        self._episode_return = np.zeros(self.n_envs)
        self._episode_length = np.zeros(self.n_envs, dtype=np.int64)

    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(obs, device=self.device)

    def _collect_rollout(self) -> None:
        """Run ``n_steps`` steps in every copy into the buffer, then compute GAE.

        Only the actor runs step by step. The critic's memory depends on the
        observations and episode starts alone, not on the actions, so its values
        are read afterwards, one sequence pass per piece (:meth:`_critic_pass`):
        the same numbers as step by step (the memory contract), without a second
        memory step and value head on every env step.
        """
        buf, policy, device = self.buffer, self.policy, self.device
        policy.train(False)
        is_box = isinstance(self.action_space, spaces.Box)
        start = self._state  # the memories before step 0
        actor_state = start.actor
        # (step, copies, their normalised final observations) of time-limit truncations
        truncations: list[tuple[int, np.ndarray, np.ndarray]] = []
        for t in range(self.n_steps):
            if buf.is_piece_start(t):
                buf.store_piece_start(t, ActorCriticState(actor_state, ()))  # the critic's: _critic_pass
            with torch.inference_mode():
                action, log_prob, actor_state = policy.actor_step(
                    self._obs, actor_state, self._episode_starts, False, self._act_generator
                )
            buf.obs[t] = self._obs
            buf.episode_starts[t] = self._episode_starts
            buf.actions[t] = action
            buf.log_probs[t] = log_prob

            action_np = action.cpu().numpy()
            if is_box:
                action_np = np.clip(action_np, self.action_space.low, self.action_space.high)
            next_obs, reward, terminated, truncated, info = self.env.step(action_np)
            done = terminated | truncated
            self.num_timesteps += self.n_envs

            # Episode statistics on the raw rewards.
            self._episode_return += reward
            self._episode_length += 1
            ended = np.flatnonzero(done)
            if ended.size:
                reach = np.minimum(t % self.bptt_length, self._episode_length[ended] - 1)
                np.add.at(self.gradient_reach, reach, 1)
            for i in ended:
                ret = float(self._episode_return[i])
                self.episode_log.append((self.num_timesteps, ret, int(self._episode_length[i])))
                self._recent_returns.append(ret)
            self._episode_return[done] = 0.0
            self._episode_length[done] = 0

            next_obs_n = self.normalizer.obs(next_obs, update=True)
            buf.rewards[t] = torch.as_tensor(self.normalizer.reward(reward, done), device=device)
            buf.terminated[t] = torch.as_tensor(terminated, device=device)
            buf.dones[t] = torch.as_tensor(done, device=device)
            cut = np.flatnonzero(truncated & ~terminated)
            if cut.size:  # normalised now, with the statistics of this step
                truncations.append(
                    (t, cut, self.normalizer.obs(np.stack([info["final_obs"][i] for i in cut])))
                )

            self._obs = self._obs_tensor(next_obs_n)
            self._episode_starts = torch.as_tensor(done, device=device)

        self._state = ActorCriticState(actor_state, self._critic_pass(start, truncations))
        with torch.inference_mode():
            last_values = policy.predict_values(
                self._obs.unsqueeze(0), self._state, self._episode_starts.unsqueeze(0)
            )[0]
        buf.compute_gae(last_values.clone(), self.gamma, self.gae_lambda)

    def _critic_pass(
        self, start: ActorCriticState, truncations: list[tuple[int, np.ndarray, np.ndarray]]
    ) -> tuple[torch.Tensor, ...]:
        """Fill the buffer's values, the critic's piece-start memories and the
        truncation bootstraps, running the critic over the collected rollout piece by
        piece from its memory at the rollout's start (``start``).

        A truncated episode bootstraps on ``V(final obs)``, read from the memory that
        episode built: the critic is replayed over the copy's piece up to the
        truncating step, then reads the final observation.

        Returns:
            the critic's memory after the last step (``()`` when the memory is shared).
        """
        buf, policy, length = self.buffer, self.policy, self.buffer.bptt_length
        shared = policy.critic_trunk is None
        trunk, state = policy.critic_memory(start)
        buf.final_values.zero_()
        for k in range(self.n_steps // length):
            first = k * length
            if not shared:
                buf.piece_states[k] = ActorCriticState(
                    buf.piece_states[k].actor, tuple(s.clone() for s in state)
                )
            piece_start = state
            with torch.inference_mode():
                steps = slice(first, first + length)
                latent, state = trunk(policy.preprocess(buf.obs[steps]), state, buf.episode_starts[steps])
                values = policy.value_from_latent(latent)  # [L, B]
            buf.values[steps] = values
            for t, cut, final_obs in truncations:
                if not first <= t < first + length:
                    continue
                idx = torch.as_tensor(cut, device=self.device)
                with torch.inference_mode():
                    _, memory = trunk(  # the memory after step t of the truncated copies
                        policy.preprocess(buf.obs[first : t + 1].index_select(1, idx)),
                        tuple(s.index_select(0, idx) for s in piece_start),
                        buf.episode_starts[first : t + 1].index_select(1, idx),
                    )
                    latent, _ = trunk(
                        policy.preprocess(self._obs_tensor(final_obs)).unsqueeze(0),
                        memory,
                        torch.zeros(1, cut.size, dtype=torch.bool, device=self.device),
                    )
                    bootstrap = policy.value_from_latent(latent)[0]
                buf.final_values[t, idx] = bootstrap
        return () if shared else state

    def _update(self, progress_remaining: float) -> dict[str, float]:
        """``n_epochs`` passes of minibatch gradient steps over the rollout."""
        self.policy.train(True)
        self.flat_params.check()
        lr = self.learning_rate(progress_remaining)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        clip_range = self.clip_range(progress_remaining)
        clip_range_vf = None if self.clip_range_vf is None else self.clip_range_vf(progress_remaining)
        logs: dict[str, list[torch.Tensor]] = collections.defaultdict(list)
        # A minibatch's normalised advantages: one minibatch is the same object in every epoch.
        normalised: tuple[Minibatch, torch.Tensor] | None = None

        for epoch in range(self.n_epochs):
            batches = self.buffer.minibatches(self.num_minibatches, self._shuffle_generator)
            for i, mb in enumerate(batches):
                # Each piece starts from its stored memory; no gradient reaches
                # back past it (the stored states are plain data).
                log_prob, entropy, values = self.policy.evaluate_actions(
                    mb.obs, mb.actions, mb.state, mb.episode_starts
                )
                if normalised is None or normalised[0] is not mb:
                    advantages = mb.advantages
                    if advantages.numel() > 1:  # per minibatch, as SB3
                        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                    normalised = (mb, advantages)
                advantages = normalised[1]

                # Clipped surrogate objective.
                log_ratio = log_prob - mb.log_probs
                ratio = log_ratio.exp()
                policy_loss = -torch.min(
                    advantages * ratio, advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
                ).mean()

                # Value loss against the TD(lambda) returns, optionally clipped
                # around the values seen while collecting.
                if clip_range_vf is not None:
                    values = mb.values + (values - mb.values).clamp(-clip_range_vf, clip_range_vf)
                value_loss = F.mse_loss(values, mb.returns)  # one fused op, forward and backward

                entropy_loss = -entropy.mean()
                loss = policy_loss + self.vf_coef * value_loss
                if self.ent_coef:  # no backward pass through a bonus of weight 0
                    loss = loss + self.ent_coef * entropy_loss

                self.flat_params.zero_grad()
                loss.backward()
                grad_norm = self.flat_params.clip_grad_norm_(self.max_grad_norm)
                if not math.isfinite(float(loss.detach() + grad_norm)):  # NaN or inf in either
                    raise FloatingPointError(
                        f"PPO update {self.n_updates + 1} (epoch {epoch + 1}, minibatch {i + 1}, "
                        f"timesteps {self.num_timesteps}): non-finite loss {loss.item()} "
                        f"(policy {policy_loss.item()}, value {value_loss.item()}, "
                        f"entropy {entropy_loss.item()}) or gradient norm {grad_norm.item()}"
                    )
                self.optimizer.step()

                # Statistics are computed once at the end of the update.
                logs["policy_loss"].append(policy_loss.detach())
                logs["value_loss"].append(value_loss.detach())
                logs["entropy_loss"].append(entropy_loss.detach())
                logs["log_ratio"].append(log_ratio.detach())

        self.n_updates += 1
        bad = self.flat_params.nonfinite()
        if bad:
            raise FloatingPointError(
                f"PPO update {self.n_updates} (timesteps {self.num_timesteps}) left non-finite "
                f"parameters: {bad}"
            )
        log_ratio = torch.stack(logs.pop("log_ratio"))  # minibatches are equal-sized
        ratio = log_ratio.exp()
        stats = {k: float(torch.stack(v).mean()) for k, v in logs.items()}
        stats["approx_kl"] = float(((ratio - 1) - log_ratio).mean())  # Schulman's k3 estimator
        stats["clip_fraction"] = float(((ratio - 1).abs() > clip_range).float().mean())
        stats.update(learning_rate=lr, clip_range=clip_range, update=self.n_updates)
        return stats

    # ------------------------------------------------------------------------
    # Acting
    # ------------------------------------------------------------------------
    def predict(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The policy's action for raw observations, carrying the actor's memory.

        As sb3-contrib's ``RecurrentPPO.predict``: pass the returned state back in
        with the next observation, and ``episode_start`` true where a new episode
        begins (the memory resets there).

        Args:
            observation: ``[B, *obs_shape]``, or one observation ``[*obs_shape]``.
            state: the actor memory from the previous call (``None``: fresh).
            episode_start: ``[B]`` bool (``None``: all false).
            deterministic: the most likely action instead of a sample.

        Returns:
            ``(action [B, ...] or [...], state)``; ``state`` is a tuple of numpy
            arrays ``[B, ...]``.
        """
        obs = np.asarray(observation)
        single = obs.shape == self.observation_space.shape
        if single:
            obs = obs[None]
        n = obs.shape[0]
        mem = (
            self.policy.actor_trunk.initial_state(n, self.device)
            if state is None
            else state_from_numpy(state, self.device)
        )
        starts = (
            torch.zeros(n, dtype=torch.bool, device=self.device)
            if episode_start is None
            else torch.as_tensor(np.asarray(episode_start, bool).reshape(n), device=self.device)
        )
        self.policy.train(False)
        with torch.inference_mode():
            action, _, mem = self.policy.actor_step(
                self._obs_tensor(self.normalizer.obs(obs)),
                mem,
                starts,
                deterministic,
                self._predict_generator,
            )
        action_np = action.cpu().numpy()
        if isinstance(self.action_space, spaces.Box):
            action_np = np.clip(action_np, self.action_space.low, self.action_space.high)
        return (action_np[0] if single else action_np), state_to_numpy(mem)

    def evaluate(
        self,
        n_episodes: int = 20,
        deterministic: bool = True,
        env: VectorEnv | None = None,
        seed: int | None = None,
    ) -> np.ndarray:
        """Undiscounted returns of ``n_episodes`` episodes, each starting from zero memory.

        Runs its own copies of the env (``min(n_episodes, n_envs)`` of them, each
        running its share of the episodes, as SB3's ``evaluate_policy`` does, so
        short episodes are not over-represented), with frozen normalisation.

        Args:
            n_episodes: how many episodes.
            deterministic: act with the most likely action.
            env: a ``SAME_STEP`` vector env to evaluate on (default: a new one of
                the training env id and kwargs).
            seed: root of the evaluation episodes (default: the agent's seed); each
                copy resets from its own stream split from it, never shared with
                training (:mod:`pomdp_bench.agents.seeding`).

        Returns:
            ``[n_episodes]`` float64 returns, in order of completion per copy.
        """
        is_box = isinstance(self.action_space, spaces.Box)
        generator = torch.Generator(device=self.device).manual_seed(self.seed + 10_001)
        self.policy.train(False)
        mem = None

        def act(obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
            nonlocal mem
            if mem is None:
                mem = self.policy.actor_trunk.initial_state(len(obs), self.device)
            with torch.inference_mode():
                action, _, mem = self.policy.actor_step(
                    self._obs_tensor(self.normalizer.obs(obs)),
                    mem,
                    torch.as_tensor(starts, device=self.device),
                    deterministic,
                    generator,
                )
            action_np = action.cpu().numpy()
            if is_box:
                action_np = np.clip(action_np, self.action_space.low, self.action_space.high)
            return action_np

        return evaluate_episodes(
            act,
            n_episodes,
            seed=self.seed if seed is None else seed,
            env=env,
            env_id=self.env_id,
            env_kwargs=self.env_kwargs,
            max_copies=self.n_envs,
        )

    # ------------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write settings, weights, optimiser and normalisation statistics to ``path``."""
        torch.save(
            {
                "format": _SAVE_FORMAT,
                "config": self._config,
                "policy": self.policy.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "normalizer": self.normalizer.state_dict(),
                "num_timesteps": self.num_timesteps,
                "n_updates": self.n_updates,
            },
            path,
        )

    @classmethod
    def load(
        cls, path: str | Path, env: str | VectorEnv | None = None, device: str | torch.device = "auto"
    ) -> PPO:
        """Rebuild a saved agent; ``env`` overrides the saved env id (required when
        the agent was trained on a vector env without an id)."""
        data = torch.load(path, map_location="cpu", weights_only=True)
        if data.get("format") != _SAVE_FORMAT:
            raise ValueError(f"{path} is not a PPO save of format {_SAVE_FORMAT}")
        config = dict(data["config"])
        if env is not None:
            config["env"] = env
            if not isinstance(env, str):
                config.pop("env_kwargs")
                config.pop("n_envs")
        if config["env"] is None:
            raise ValueError(f"{path} was trained on a vector env without an id; pass env=")
        model = cls(**config, device=device)
        model.policy.load_state_dict(data["policy"])
        model.optimizer.load_state_dict(data["optimizer"])
        model.normalizer.load_state_dict(data["normalizer"])
        model.num_timesteps = int(data["num_timesteps"])
        model.n_updates = int(data["n_updates"])
        return model
