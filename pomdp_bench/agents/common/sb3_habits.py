"""What SB3 users type, answered here: the agent shell's translations of SB3 habits.

- :func:`refuse_policy_string`: ``PPO("MlpLstmPolicy", env_id)`` gets the call that
  works here (``PPO(env_id, memory="lstm")``).
- :func:`from_policy_kwargs`: SB3's ``policy_kwargs`` as our memory and settings where
  they have an equivalent; the rest refused by name.
- :func:`log_line`: the line ``verbose=1`` prints per ``history`` entry.
- :func:`refuse_sb3_keywords`: SB3 constructor keywords with no meaning here, answered
  with what plays their part.
- :func:`split_callback`, :class:`CallbackDriver` and :class:`StepHook`: SB3's callbacks
  driven from ``learn``.
- :func:`make_logger` and :func:`sb3_records`: SB3's ``Logger`` (TensorBoard files) fed
  from ``history``.

SB3 is imported only where an SB3 callback or logger is asked for: it is the ``[sb3]``
extra.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig

# SB3's policy names -> the memory that plays their part here (None: not supported).
_SB3_POLICIES = {
    "MlpPolicy": "None",
    "MlpLstmPolicy": '"lstm"',
    "CnnPolicy": None,
    "CnnLstmPolicy": None,
    "MultiInputPolicy": None,
    "MultiInputLstmPolicy": None,
}


def refuse_policy_string(agent: str, env: Any, memory: Any) -> None:
    """Answer SB3's ``PPO("MlpLstmPolicy", env_id)`` with the call that works here."""
    if not (isinstance(env, str) and env in _SB3_POLICIES):
        return
    target = memory if isinstance(memory, str) else "<env id>"
    equivalent = _SB3_POLICIES[env]
    if equivalent is None:
        raise TypeError(
            f"{agent} takes the env first and has no policy argument, and {env!r} (image or dict "
            f"observations) has no equivalent here: flat Box or Discrete observations only"
        )
    raise TypeError(
        f"{agent} takes the env first and has no policy argument: instead of "
        f"{agent}({env!r}, {target!r}) use {agent}({target!r}, memory={equivalent}) "
        f"(memory: one of {list(MEMORY_KINDS[1:])}, or None)"
    )


def log_line(entry: Mapping[str, float]) -> str:
    """One ``history`` entry as a line, the keys SB3 prints first."""
    first = ("timesteps", "mean_return", "episodes", "steps_per_second")
    keys = [k for k in first if k in entry] + sorted(k for k in entry if k not in first)
    return " | ".join(f"{k} {entry[k]:.4g}" for k in keys)


# SB3 policy_kwargs -> (setting, conversion); memory keys are handled apart.
_POLICY_KWARGS = (
    "net_arch",
    "activation_fn",
    "ortho_init",
    "log_std_init",
    "enable_critic_lstm",
    "shared_lstm",
)
_MEMORY_KWARGS = {"lstm_hidden_size": "hidden_size", "n_lstm_layers": "num_layers"}


def from_policy_kwargs(
    policy_kwargs: Mapping[str, Any], memory: Any, changes: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """SB3's ``policy_kwargs`` as our memory and settings (see :class:`Agent`)."""
    unknown = sorted(set(policy_kwargs) - set(_POLICY_KWARGS) - set(_MEMORY_KWARGS))
    if unknown:
        raise TypeError(
            f"policy_kwargs {unknown} have no equivalent here; supported: "
            f"{[*_POLICY_KWARGS, *_MEMORY_KWARGS]} (the rest are settings: pass them as keywords)"
        )
    changes = dict(changes)
    for key in ("net_arch", "ortho_init", "log_std_init"):
        if key in policy_kwargs:
            changes[key] = policy_kwargs[key]
    if "activation_fn" in policy_kwargs:
        fn = policy_kwargs["activation_fn"]
        changes["activation"] = fn if isinstance(fn, str) else getattr(fn, "__name__", str(fn)).lower()
    if "shared_lstm" in policy_kwargs or "enable_critic_lstm" in policy_kwargs:
        changes["shared_memory"] = bool(policy_kwargs.get("shared_lstm", False)) or not bool(
            policy_kwargs.get("enable_critic_lstm", True)
        )
    sizes = {
        ours: policy_kwargs[theirs] for theirs, ours in _MEMORY_KWARGS.items() if theirs in policy_kwargs
    }
    if sizes:  # kind names on purpose: SB3's lstm_* kwargs size RecurrentPPO's LSTM, our lstm
        config = MemoryConfig.from_any("lstm" if memory is None else memory).to_dict()
        if config["kind"] != "lstm":
            raise ValueError(
                f"lstm_hidden_size and n_lstm_layers set an lstm memory, but memory is {config['kind']!r}"
            )
        memory = {**config, **sizes}
    return memory, changes


# SB3 constructor keywords with no setting of the same name here -> what plays their part.
_SB3_KEYWORDS = {
    "stats_window_size": "the mean return (history's mean_return, rollout/ep_rew_mean) is over "
    "the last 100 episodes, SB3's default",
    "use_sde": "Box actions are Gaussian with a learned log std (log_std_init); no gSDE",
    "sde_sample_freq": "Box actions are Gaussian with a learned log std (log_std_init); no gSDE",
    "target_kl": "no early stop on the KL; approx_kl is in history and logged as train/approx_kl",
    "normalize_advantage": "advantages are always normalised per minibatch, as SB3's default",
    "rollout_buffer_class": "the rollout buffer is the agent's own (its shape: n_envs, n_steps, bptt_length)",
    "rollout_buffer_kwargs": "the rollout buffer is the agent's own (its shape: n_envs, n_steps, bptt_length)",
    "replay_buffer_class": "the sequence replay buffer is the agent's own (its size: buffer_size)",
    "replay_buffer_kwargs": "the sequence replay buffer is the agent's own (its size: buffer_size)",
    "optimize_memory_usage": "the sequence replay buffer stores each observation once already",
    "monitor_wrapper": "the agent records episodes itself (episode_log, history); no Monitor is needed",
    "_init_setup_model": "the model is always built at construction",
    "create_eval_env": "use SB3's EvalCallback in learn(callback=...) or evaluate(env=...)",
}


def refuse_sb3_keywords(agent: str, changes: Mapping[str, Any], settings: tuple[str, ...]) -> None:
    """Answer an SB3 constructor keyword that has no meaning here with what does."""
    for key in changes:
        if key in _SB3_KEYWORDS and key not in settings:
            raise TypeError(f"{agent} has no {key!r} (an SB3 keyword): {_SB3_KEYWORDS[key]}")


# ----------------------------------------------------------------------------
# Callbacks
# ----------------------------------------------------------------------------
def is_sb3_callback(obj: Any) -> bool:
    """Whether ``obj`` is an SB3 ``BaseCallback`` (checked without importing SB3)."""
    return any(
        klass.__name__ == "BaseCallback" and klass.__module__.startswith("stable_baselines3")
        for klass in type(obj).__mro__
    )


def split_callback(callback: Any) -> tuple[list[Callable[[Any], Any]], Any]:
    """``learn``'s ``callback`` as ``(functions of the agent, one SB3 callback or None)``.

    A list may mix both; its SB3 callbacks become one ``CallbackList``.

    Raises:
        TypeError: something that is neither, naming what ``callback`` takes.
    """
    if callback is None:
        return [], None
    items = list(callback) if isinstance(callback, (list, tuple)) else [callback]
    functions, sb3 = [], []
    for item in items:
        if is_sb3_callback(item):
            sb3.append(item)
        elif callable(item):
            functions.append(item)
        else:
            raise TypeError(
                "callback must be a function of the agent (returning False stops training), an SB3 "
                f"BaseCallback, or a list of them; got {type(item).__name__}"
            )
    if not sb3:
        return functions, None
    if len(sb3) == 1:
        return functions, sb3[0]
    from stable_baselines3.common.callbacks import CallbackList  # SB3 is loaded: it made them

    return functions, CallbackList(sb3)


def walk_callbacks(callback: Any) -> Iterator[Any]:
    """``callback`` and the callbacks inside it (a ``CallbackList``'s, an ``EventCallback``'s
    child, ``EvalCallback``'s ``callback_on_new_best``)."""
    yield callback
    for child in [
        *getattr(callback, "callbacks", []),
        getattr(callback, "callback", None),
        getattr(callback, "callback_on_new_best", None),
    ]:
        if child is not None and is_sb3_callback(child):
            yield from walk_callbacks(child)


def infos_as_list(infos: Mapping[str, Any], n: int) -> list[dict[str, Any]]:
    """A Gymnasium vector env's ``infos`` (a dict of arrays with ``_key`` masks) as SB3's
    list of one dict per copy; ``final_obs`` is also SB3's ``terminal_observation``."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if isinstance(values, Mapping):  # final_info: a dict of arrays itself
            values = infos_as_list(values, n)
        for i in range(n):
            if mask is None or mask[i]:
                out[i][key] = values[i]
                if key == "final_obs":
                    out[i]["terminal_observation"] = values[i]
    return out


class CallbackDriver:
    """Runs an SB3 callback from ``learn``, calling ``on_step`` once per vector env step.

    :class:`StepHook` reports each ``env.step``. ``on_step`` for a step runs when the
    agent is done with it: at the next ``env.step``, or at the end of the iteration
    for its last step, so that ``num_timesteps`` counts the step, as in SB3.
    ``on_rollout_start`` runs before an iteration's first env step, ``on_rollout_end``
    at its end. A ``False`` from ``on_step`` stops training at the end of the iteration.
    """

    def __init__(self, callback: Any, n_envs: int) -> None:
        self.callback, self.n_envs = callback, n_envs
        self.pending: dict[str, Any] | None = None  # the last step's locals, not yet reported
        self.in_rollout = False
        self.stop = False

    def before_step(self) -> None:
        self.flush()
        if not self.in_rollout:
            self.in_rollout = True
            self.callback.on_rollout_start()

    def after_step(self, actions: Any, result: tuple[Any, ...]) -> None:
        obs, rewards, terminated, truncated, infos = result
        self.pending = {
            "actions": actions,
            "clipped_actions": actions,
            "new_obs": obs,
            "rewards": rewards,
            "dones": terminated | truncated,
            "infos": infos_as_list(infos, self.n_envs),
        }

    def flush(self) -> None:
        if self.pending is not None:
            self.callback.update_locals(self.pending)
            self.pending = None
            if self.callback.on_step() is False:
                self.stop = True

    def end_iteration(self) -> None:
        self.flush()
        if self.in_rollout:
            self.in_rollout = False
            self.callback.on_rollout_end()


class StepHook:
    """The training vector env during a ``learn`` with an SB3 callback: each ``step``
    reports to a :class:`CallbackDriver`; everything else is the env's."""

    def __init__(self, env: Any, driver: CallbackDriver) -> None:
        self.hooked_env, self._driver = env, driver

    def step(self, actions: Any) -> tuple[Any, ...]:
        self._driver.before_step()
        result = self.hooked_env.step(actions)
        self._driver.after_step(actions, result)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.hooked_env, name)


# ----------------------------------------------------------------------------
# Logging
# ----------------------------------------------------------------------------
LOGGING_EXTRAS = 'pip install "pomdp-bench[sb3,tensorboard]"'

# history keys -> SB3's logger keys; None: not logged; any other key is "train/<key>".
_SB3_KEYS: dict[str, str | None] = {
    "timesteps": None,  # the dump's step (and time/total_timesteps)
    "mean_return": "rollout/ep_rew_mean",
    "exploration_rate": "rollout/exploration_rate",
    "steps_per_second": "time/fps",
    "episodes": "time/episodes",
    "update": "train/n_updates",
    "n_updates": "train/n_updates",
    "policy_loss": "train/policy_gradient_loss",
}
_INTEGER_KEYS = ("time/fps", "time/episodes", "train/n_updates")
#: keys SB3 keeps out of TensorBoard (its step axis and counters)
TENSORBOARD_EXCLUDED = ("time/episodes", "train/n_updates")


def sb3_records(entry: Mapping[str, float]) -> dict[str, float | int]:
    """A ``history`` entry under SB3's logger keys (PPO's ``value_loss`` is
    ``train/value_loss``, ``policy_loss`` ``train/policy_gradient_loss``, ...); NaNs
    (a mean return before the first episode) are left out, as SB3 leaves them out.
    SB3 keeps :data:`TENSORBOARD_EXCLUDED` out of TensorBoard."""
    records: dict[str, float | int] = {}
    for key, value in entry.items():
        name = _SB3_KEYS.get(key, f"train/{key}")
        if name is None or not math.isfinite(value):
            continue
        records[name] = int(value) if name in _INTEGER_KEYS else float(value)
    return records


def check_logging_extras(what: str) -> None:
    """Raise ``ImportError`` naming the extra when SB3 or tensorboard is missing."""
    missing = [
        name for name in ("stable_baselines3", "tensorboard") if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise ImportError(f"{what} needs {' and '.join(missing)}: {LOGGING_EXTRAS}")


def make_logger(tensorboard_log: str | None, tb_log_name: str, reset_num_timesteps: bool) -> Any:
    """SB3's ``Logger``: TensorBoard event files in ``<tensorboard_log>/<tb_log_name>_<n>``
    (SB3's ``configure_logger``: a new ``n`` per ``learn``, the last one again with
    ``reset_num_timesteps=False``), or one that writes nothing."""
    try:
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.utils import configure_logger
    except ImportError as error:
        raise ImportError(f"the logger is SB3's: {LOGGING_EXTRAS}") from error
    if tensorboard_log is None:
        return Logger(folder=None, output_formats=[])
    return configure_logger(0, os.fspath(tensorboard_log), tb_log_name, reset_num_timesteps)
