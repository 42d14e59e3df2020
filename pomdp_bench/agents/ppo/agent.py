"""Recurrent PPO (clip), for every memory kind, checked against sb3-contrib's RecurrentPPO.

The algorithm reads top to bottom in :meth:`PPO._iterate` (the loop ``learn``
drives): collect a rollout with the memory running (:meth:`PPO._collect_rollout`),
compute GAE, then train on whole bptt pieces of it (:meth:`PPO._update`), the loss
next to its data.
``predict``, ``evaluate``, ``save`` and ``load`` come from the shared shell
(:class:`~pomdp_bench.agents.common.base.Agent`); the settings are
:class:`~pomdp_bench.agents.ppo.settings.PPOSettings`.

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
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import Tensor

from pomdp_bench.agents.common.base import Agent
from pomdp_bench.agents.common.flat_parameters import FlatAdam, FlatParameters
from pomdp_bench.agents.common.networks import MemoryState
from pomdp_bench.agents.common.normalization import Normalizer
from pomdp_bench.agents.common.spaces import check_action_space
from pomdp_bench.agents.ppo.networks import ActorCritic, ActorCriticState, NetArch
from pomdp_bench.agents.ppo.rollout_buffer import Minibatch, RecurrentRolloutBuffer
from pomdp_bench.agents.ppo.settings import PPOSettings


def clip_ratio(ratio: Tensor, old_log_probs: Tensor, clip_range: float, clip_rise: str) -> Tensor:
    """PPO's clipped probability ratio ``pi / pi_old`` (any shape, e.g. ``[T, B]``).

    A fall is clipped at ``1 - clip_range``. A rise is clipped at ``1 + clip_range``
    (``clip_rise="ratio"``, PPO's clip) or at ``1 + clip_range / pi_old``
    (``"probability"``: ``pi <= pi_old + clip_range``, for discrete actions), so that an
    action at ``pi_old = 1e-3`` may rise to ``0.2 + 1e-3`` in one update, not to ``1.2e-3``.
    """
    if clip_rise == "probability":
        rise = 1 + clip_range * (-old_log_probs).exp()
        return torch.minimum(ratio.clamp(min=1 - clip_range), rise)
    return ratio.clamp(1 - clip_range, 1 + clip_range)


class PPO(Agent[PPOSettings]):
    """Proximal Policy Optimisation (clip) with an optional memory.

    Built as every agent is (:class:`~pomdp_bench.agents.common.base.Agent`)::

        PPO(env, memory=None, *, env_kwargs=None, settings=None, device="auto", **changes)

    where ``changes`` are fields of :class:`~pomdp_bench.agents.ppo.settings.PPOSettings`
    (``n_steps``, ``bptt_length``, ``learning_rate``, ``seed``, ...).

    Raises:
        TypeError: an unknown setting (the message lists the valid ones), a wrong
            type, an observation or action space the agent cannot take
            (:mod:`pomdp_bench.agents.common.spaces` lists those it can).
        ValueError: settings that cannot work (e.g. a ``bptt_length`` that does not
            divide the default), with the valid values in the message.
    """

    settings_class = PPOSettings
    save_format = 3  # 3: settings beside the env; 2: one flat "config" dict
    legacy_format = 2
    evaluation_copies = None  # as many as the training copies
    default_n_envs = 8
    # Random streams, seed + offset: the networks and action sampling 0, the
    # minibatch shuffles 1, predict() 2, evaluate() 10_001 (the shell's).
    predict_stream = 2

    def _setup_model(self) -> None:
        s = self.settings
        if s.normalize_observations and not isinstance(self.observation_space, spaces.Box):
            raise ValueError(
                f"normalize_observations needs a Box observation space, got {self.observation_space}"
            )
        check_action_space(self.action_space, "PPO")
        if s.uniform_kl_coef and isinstance(self.action_space, spaces.Box):
            raise ValueError(
                f"uniform_kl_coef needs discrete actions (a KL to the uniform policy), got "
                f"uniform_kl_coef={s.uniform_kl_coef} and {self.action_space}"
            )
        if s.clip_rise != "ratio" and isinstance(self.action_space, spaces.Box):
            raise ValueError(
                f"clip_rise={s.clip_rise!r} needs discrete actions (it bounds a probability, "
                f"not a density), got {self.action_space}; use clip_rise='ratio'"
            )
        # Discrete heads count from 0; a space starting elsewhere is shifted on the way out.
        start = getattr(self.action_space, "start", None)
        self._action_start = None if start is None or not np.any(start) else np.asarray(start, np.int64)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s.seed)
            self.policy = ActorCritic(
                self.observation_space,
                self.action_space,
                s.memory,
                NetArch.parse(s.net_arch),
                activation=s.activation,
                shared_memory=s.shared_memory,
                obs_skip=s.obs_skip,
                ortho_init=s.ortho_init,
                log_std_init=s.log_std_init,
                epsilon_soft=s.epsilon_soft,
            ).to(self.device)
        # One flat buffer for all parameters: zeroing, clipping and Adam are one op
        # each (see flat_parameters). eps 1e-5 as SB3's policies.
        self.flat_params = FlatParameters(self.policy)
        self.optimizer = FlatAdam(self.flat_params.param, lr=s.learning_rate(1.0), eps=1e-5)
        self.normalizer = Normalizer(
            self.observation_space.shape,
            self.n_envs,
            normalize_observations=s.normalize_observations,
            normalize_rewards=s.normalize_rewards,
            gamma=s.gamma,
        )
        self.buffer = RecurrentRolloutBuffer(
            s.n_steps,
            self.n_envs,
            self.observation_space.shape,
            torch.float32,
            self.action_space.shape,
            torch.float32 if isinstance(self.action_space, spaces.Box) else torch.long,
            s.bptt_length,
            self.device,
        )
        self._act_generator = self._stream(0)
        self._shuffle_generator = torch.Generator().manual_seed(s.seed + 1)
        # gradient_reach[k]: training episodes whose last step's gradient reaches exactly k
        # steps back within its episode (the piece's start or the episode's, whichever is
        # later); k >= h means a cue h steps before the decision shares the decision's piece.
        self.gradient_reach = np.zeros(s.bptt_length, dtype=np.int64)
        self._obs: torch.Tensor | None = None  # next observation, normalised, [B, *obs_shape]

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        """The training loop (``learn`` in the shell drives it): whole rollouts, each
        collected then trained on; yields the env steps of each.

        After each update ``self.history`` gains a dict: ``timesteps``, ``mean_return``
        (mean undiscounted return of the last 100 finished episodes, NaN before the
        first, like SB3's ``rollout/ep_rew_mean``), ``episodes``, the losses,
        ``approx_kl``, ``clip_fraction``, ``learning_rate``, ``clip_range`` and
        ``steps_per_second``. ``self.gradient_reach [bptt_length]`` counts finished
        training episodes by how many steps back the gradient from their last step
        reaches within the episode (pieces are fixed windows of the rollout: a
        decision's gradient stops at its piece's start).
        """
        start_timesteps = self.num_timesteps
        rollout_size = self.settings.rollout_size
        t0, steps0 = time.perf_counter(), self.num_timesteps
        for _ in range(math.ceil(total_timesteps / rollout_size)):
            self._collect_rollout()
            # SB3's progress: the fraction of the budget left after this rollout.
            progress_remaining = 1.0 - (self.num_timesteps - start_timesteps) / total_timesteps
            stats = self._update(max(progress_remaining, 0.0))
            stats["timesteps"] = self.num_timesteps
            stats["episodes"] = len(self.episode_log)
            stats["mean_return"] = self._mean_recent_return()
            stats["steps_per_second"] = (self.num_timesteps - steps0) / (time.perf_counter() - t0)
            self.history.append(stats)
            yield rollout_size

    def _start_episodes(self) -> None:
        obs = self._reset_training_envs()
        self.normalizer.reset_returns()
        self._obs = self._obs_tensor(self.normalizer.obs(obs, update=True))
        self._state = self.policy.initial_state(self.n_envs, self.device)
        self._episode_starts = torch.ones(self.n_envs, dtype=torch.bool, device=self.device)

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
        start = self._state  # the memories before step 0
        actor_state = start.actor
        # (step, copies, their normalised final observations) of time-limit truncations
        truncations: list[tuple[int, np.ndarray, np.ndarray]] = []
        for t in range(self.settings.n_steps):
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

            next_obs, reward, terminated, truncated, info = self.env.step(self._to_env_action(action))
            done = terminated | truncated
            self.num_timesteps += self.n_envs

            # Episode statistics on the raw rewards.
            ended, lengths = self._track_episodes(reward, done)
            if ended.size:
                reach = np.minimum(t % self.settings.bptt_length, lengths - 1)
                np.add.at(self.gradient_reach, reach, 1)

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
        buf.compute_gae(last_values.clone(), self.settings.gamma, self.settings.gae_lambda)

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
        for k in range(self.settings.n_steps // length):
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
        s = self.settings
        self.policy.train(True)
        self.flat_params.check()
        lr = s.learning_rate(progress_remaining)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        clip_range = s.clip_range(progress_remaining)
        clip_range_vf = None if s.clip_range_vf is None else s.clip_range_vf(progress_remaining)
        logs: dict[str, list[torch.Tensor]] = collections.defaultdict(list)
        # A minibatch's normalised advantages: one minibatch is the same object in every epoch.
        normalised: tuple[Minibatch, torch.Tensor] | None = None

        for epoch in range(s.n_epochs):
            batches = self.buffer.minibatches(s.num_minibatches, self._shuffle_generator)
            for i, mb in enumerate(batches):
                # Each piece starts from its stored memory; no gradient reaches
                # back past it (the stored states are plain data).
                log_prob, entropy, values, kl_uniform = self.policy.evaluate_actions(
                    mb.obs, mb.actions, mb.state, mb.episode_starts, uniform_kl=bool(s.uniform_kl_coef)
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
                clipped = clip_ratio(ratio, mb.log_probs, clip_range, s.clip_rise)
                policy_loss = -torch.min(advantages * ratio, advantages * clipped).mean()

                # Value loss against the TD(lambda) returns, optionally clipped
                # around the values seen while collecting.
                if clip_range_vf is not None:
                    values = mb.values + (values - mb.values).clamp(-clip_range_vf, clip_range_vf)
                value_loss = F.mse_loss(values, mb.returns)  # one fused op, forward and backward

                entropy_loss = -entropy.mean()
                loss = policy_loss + s.vf_coef * value_loss
                if s.ent_coef:  # no backward pass through a bonus of weight 0
                    loss = loss + s.ent_coef * entropy_loss
                if kl_uniform is not None:  # a log barrier that keeps every action tried
                    uniform_kl_loss = kl_uniform.mean()
                    loss = loss + s.uniform_kl_coef * uniform_kl_loss
                    logs["uniform_kl"].append(uniform_kl_loss.detach())

                self.flat_params.zero_grad()
                loss.backward()
                grad_norm = self.flat_params.clip_grad_norm_(s.max_grad_norm)
                self._check_finite(  # one sync: NaN or inf in either makes the sum non-finite
                    loss.detach() + grad_norm,
                    "the loss plus the gradient norm",
                    f"epoch {epoch + 1}, minibatch {i + 1}",
                    policy_loss=policy_loss,
                    value_loss=value_loss,
                    entropy_loss=entropy_loss,
                    gradient_norm=grad_norm,
                )
                self.optimizer.step()

                # Statistics are computed once at the end of the update.
                logs["policy_loss"].append(policy_loss.detach())
                logs["value_loss"].append(value_loss.detach())
                logs["entropy_loss"].append(entropy_loss.detach())
                logs["log_ratio"].append(log_ratio.detach())
                logs["clipped"].append((clipped != ratio).detach())

        self.n_updates += 1
        bad = self.flat_params.nonfinite()
        if bad:
            raise FloatingPointError(
                f"PPO update {self.n_updates} (timesteps {self.num_timesteps}) left non-finite "
                f"parameters: {bad}"
            )
        log_ratio = torch.stack(logs.pop("log_ratio"))  # minibatches are equal-sized
        ratio = log_ratio.exp()
        clipped = torch.stack(logs.pop("clipped"))
        stats = {k: float(torch.stack(v).mean()) for k, v in logs.items()}
        stats["approx_kl"] = float(((ratio - 1) - log_ratio).mean())  # Schulman's k3 estimator
        stats["clip_fraction"] = float(clipped.float().mean())  # samples at a bound
        stats.update(learning_rate=lr, clip_range=clip_range, update=self.n_updates)
        return stats

    # ------------------------------------------------------------------------
    # Acting and persistence (the shell's hooks)
    # ------------------------------------------------------------------------
    def _initial_actor_state(self, n: int) -> MemoryState:
        return self.policy.actor_trunk.initial_state(n, self.device)

    def _act(
        self,
        obs: np.ndarray,
        state: MemoryState,
        starts: torch.Tensor,
        deterministic: bool,
        generator: torch.Generator,
    ) -> tuple[np.ndarray, MemoryState]:
        """One actor step on raw observations, normalised with frozen statistics."""
        self.policy.train(False)
        with torch.inference_mode():
            action, _, state = self.policy.actor_step(
                self._obs_tensor(self.normalizer.obs(obs)), state, starts, deterministic, generator
            )
        return self._to_env_action(action), state

    def _to_env_action(self, action: torch.Tensor) -> np.ndarray:
        """Actions as numpy, ``Box`` ones clipped into the bounds (SB3's behaviour),
        discrete ones shifted by the space's ``start``."""
        action_np = action.cpu().numpy()
        if isinstance(self.action_space, spaces.Box):
            return np.clip(action_np, self.action_space.low, self.action_space.high)
        return action_np if self._action_start is None else action_np + self._action_start

    def _networks(self) -> tuple[torch.nn.Module, ...]:
        return (self.policy,)

    def _state_dicts(self) -> dict[str, Any]:
        return {
            "policy": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "normalizer": self.normalizer.state_dict(),
        }

    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        self.policy.load_state_dict(data["policy"])
        self.optimizer.load_state_dict(data["optimizer"])
        self.normalizer.load_state_dict(data["normalizer"])
