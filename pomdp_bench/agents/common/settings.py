"""What every agent's settings share (:class:`AgentSettings`). Each agent has one
frozen dataclass on it, documented field by field, in its own package
(``ppo/settings.py``: ``PPOSettings``; ``sac/settings.py``: ``SACSettings``;
``dqn/settings.py``: ``DQNSettings``).

A settings object is the single statement of what an agent can be told:

- It validates itself when made: a bad value raises ``ValueError`` (or
  ``TypeError`` for a wrong type), naming the field, the value and what is valid;
  an unknown name raises ``TypeError`` listing the valid ones (:meth:`make`).
- :meth:`resolve` runs the checks that need the number of env copies (a rollout
  the minibatches divide, a replay buffer that holds a sequence, ...) and fills the
  defaults that depend on it; an agent keeps the resolved settings as ``.settings``.
- ``save`` writes :meth:`to_dict` (plain data) and ``load`` reads it back with
  :meth:`from_dict`.
- The harness fills them from ``agents/*.yaml`` (whose keys are these fields) plus
  the run's memory, BPTT length and seed, and checks a suite's entries when it
  loads the suite.

The env (an id or a vector env), its kwargs and the device are not settings: they
say where the agent runs, not what it is.

``help(PPOSettings)`` shows every field: the class docstring gains a ``:param name:``
line per field, made from the field's attribute docstring when the class is defined
(:func:`field_docs`), so the two never disagree.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pomdp_bench.agents.common.networks import activation_class
from pomdp_bench.agents.common.schedules import as_schedule, schedule_to_data
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.tuned import hyperparameter_file, tuned_hyperparameters
from pomdp_bench.validation import check_int

S = TypeVar("S", bound="AgentSettings")


@functools.cache
def field_docs(cls: type) -> tuple[tuple[str, str], ...]:
    """``(name, docstring)`` of each field ``cls`` declares itself with an attribute
    docstring (an annotated assignment followed by a string), in source order; ``()``
    where the source cannot be read (the class docstring then lacks the ``:param`` lines)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return ()
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = []
    for node, after in itertools.pairwise(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        if ast.unparse(node.annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        doc = (
            after.value.value
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            else None
        )
        if isinstance(doc, str):
            docs.append((node.target.id, inspect.cleandoc(doc)))
    return tuple(docs)


def _param_lines(cls: type) -> str:
    """The ``:param name: doc`` lines of ``cls`` and its settings bases (own fields first)."""
    seen: set[str] = set()
    lines = []
    for klass in cls.__mro__:
        if not (isinstance(klass, type) and issubclass(klass, AgentSettings)):
            continue
        for name, doc in field_docs(klass):
            if name not in seen:
                seen.add(name)
                lines.append(f":param {name}: " + doc.replace("\n", "\n    "))
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    """What every agent's settings share: the memory, the seed, the env copies, the
    torch threads, construction from keywords and the plain-data round trip.

    Every subclass's docstring gains a ``:param name:`` line per field (SB3's style, so
    ``help()`` shows them), made from the attribute docstrings of its fields.
    """

    #: the agent the settings belong to, for messages
    agent: ClassVar[str]
    #: fields whose valid values depend on the number of env copies, reset to their
    #: defaults when ``load`` puts a save on an env with another number of copies
    copy_dependent: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:  # every agent's settings declare these fields
        memory: MemoryConfig
        n_envs: int | None
        seed: int | None

    num_threads: int | None = dataclasses.field(default=1, kw_only=True)
    """Torch's intra-op threads: the agent calls ``torch.set_num_threads(num_threads)``
    when built and at each ``learn`` (process-wide, as the harness does in each worker,
    with 1). ``None`` leaves torch's own choice."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        params = _param_lines(cls)
        if params:
            doc = inspect.cleandoc(cls.__doc__ or "")
            cls.__doc__ = f"{doc}\n\n{params}\n" if doc else f"{params}\n"

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The fields: the agent's own in the order it declares them, then the shared ones
        (``num_threads``)."""
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        shared = [f.name for f in dataclasses.fields(AgentSettings)]
        return (*(n for n in names if n not in shared), *shared)

    @classmethod
    def make(cls: type[S], base: S | None = None, **changes: Any) -> S:
        """``base`` (default: the defaults) with ``changes``; an unknown name raises
        ``TypeError`` naming it and listing the valid ones."""
        unknown = sorted(set(changes) - set(cls.field_names()))
        if unknown:
            raise TypeError(
                f"{cls.agent} has no setting{'s' if len(unknown) > 1 else ''} {unknown}; "
                f"valid settings: {list(cls.field_names())}"
            )
        if base is None:
            return cls(**changes)
        return dataclasses.replace(base, **changes)  # type: ignore[type-var]

    @classmethod
    def tuned(cls: type[S], env_id: str, env_kwargs: Mapping[str, Any] | None = None, **changes: Any) -> S:
        """The settings tuned for ``env_id`` (its entry in ``agents/<agent>.yaml``; for
        ``env_kwargs``, the band of their memory horizon where the entry has
        ``horizons``), with ``changes``. The plain constructor uses the library's
        defaults instead.

        Raises:
            ValueError: the file has no entry for ``env_id``; the message lists those it has.
        """
        table = hyperparameter_file(cls.agent.lower())
        if env_id not in table:
            known = sorted(k for k in table if k != "default")
            raise ValueError(
                f"agents/{cls.agent.lower()}.yaml has no tuned {cls.agent} settings for {env_id!r}; "
                f"it has {known}. Use {cls.__name__}() for the library defaults."
            )
        return cls.make(**{**tuned_hyperparameters(cls.agent.lower(), env_id, env_kwargs), **changes})

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """Read what :meth:`to_dict` wrote (or an ``agents/*.yaml`` entry)."""
        return cls.make(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (numbers, strings, lists, dicts) that :meth:`from_dict` reads back."""
        data: dict[str, Any] = {}
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, MemoryConfig):
                value = value.to_dict()
            elif name in self._schedules:
                value = None if value is None else schedule_to_data(value)
            data[name] = value
        return data

    _schedules: ClassVar[tuple[str, ...]] = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # normalising a frozen dataclass's field

    def _check_common(self) -> None:
        self._set("memory", MemoryConfig.from_any(self.memory))
        if self.n_envs is not None:
            self._set("n_envs", check_int("n_envs", self.n_envs, minimum=1))
        if self.seed is not None:  # None: the agent draws one from numpy's global generator
            self._set("seed", check_int("seed", self.seed))
        if self.num_threads is not None:
            try:
                self._set("num_threads", check_int("num_threads", self.num_threads, minimum=1))
            except ValueError as error:  # ArgumentTypeError (a TypeError) included
                raise type(error)(f"{error} (or None: torch's own choice)") from None
        for name in self._schedules:
            value = getattr(self, name)
            if value is not None:
                self._set(name, as_schedule(name, value))
        if hasattr(self, "activation"):  # agents with networks name their activation
            activation_class(self.activation)
