"""What SB3 users type, answered here: the agent shell's translations of SB3 habits.

- :func:`refuse_policy_string`: ``PPO("MlpLstmPolicy", env_id)`` gets the call that
  works here (``PPO(env_id, memory="lstm")``).
- :func:`from_policy_kwargs`: SB3's ``policy_kwargs`` as our memory and settings where
  they have an equivalent; the rest refused by name.
- :func:`log_line`: the line ``verbose=1`` prints per ``history`` entry.
"""

from __future__ import annotations

from collections.abc import Mapping
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
