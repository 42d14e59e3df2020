"""Add a memory kind behind the contract, check it, and train PPO with it.

The kind: ``elman``, the plainest recurrent memory, ``h_t = f(W x_t + U h_(t-1) + b)``
(torch's ``nn.RNNCell``), written as a masked loop: the state of a copy is zeroed
before the step that starts its episode. Any kind must do that inside its forward,
so that one call can span several episodes and acting (one step) and training
(whole sequences) compute the same thing. It has a setting of its own,
``nonlinearity`` (``f``: "tanh" or "relu"), declared as a frozen dataclass beside the
class and registered with it: configs then take it, check it and store it.

    python examples/new_memory_kind.py               # check it, then 20k steps of PPO on T-Maze
    python examples/new_memory_kind.py --steps 2000  # a quick look

In a checkout, a shipped kind instead gets a module in ``pomdp_bench/memory/kinds/``
that makes the same ``register_memory`` call, and its name in ``MEMORY_KINDS``;
``tests/test_memory.py`` then runs the same checks on it (docs/DESIGN.md, "Extending").
"""

import argparse
import dataclasses

import torch
from torch import Tensor, nn

from pomdp_bench import PPO, PPOSettings
from pomdp_bench.memory import Memory, MemoryConfig, MemoryOptions, build_memory, register_memory
from pomdp_bench.memory.contract import check_memory
from pomdp_bench.validation import check_choice


@dataclasses.dataclass(frozen=True)
class ElmanOptions(MemoryOptions):
    """``elman``'s own settings; ``hidden_size`` and the other common ones come with every kind.

    Args:
        nonlinearity: ``f``, "tanh" (default) or "relu".
    """

    nonlinearity: str = "tanh"

    def __post_init__(self) -> None:  # checked when a config is made
        check_choice("nonlinearity", self.nonlinearity, ("tanh", "relu"))


class ElmanMemory(Memory):
    """``[T, B, D] -> [T, B, H]``: an RNN cell, one step at a time.

    State: ``(h [B, H],)``, zero at an episode start.
    """

    kind = "elman"
    trains_through_time = True  # it learns what to carry: the BPTT length matters

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        options: ElmanOptions = config.options  # this kind's own settings
        self.cell = nn.RNNCell(input_size, config.hidden_size, nonlinearity=options.nonlinearity)

    def state_spec(self):
        return (((self.config.hidden_size,), True),)  # one float tensor [B, H]

    def _forward(
        self, x: Tensor, state: tuple[Tensor, ...], starts: Tensor
    ) -> tuple[Tensor, tuple[Tensor, ...]]:
        h, outputs = state[0], []  # h [B, H]
        for t in range(x.shape[0]):
            h = h.masked_fill(starts[t, :, None], 0.0)  # this step starts an episode: forget
            h = self.cell(x[t], h)
            outputs.append(h)
        return torch.stack(outputs), (h,)  # [T, B, H], and the state after the last step


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--steps", type=int, default=20_000, help="PPO env steps")
    args = parser.parse_args()

    register_memory("elman", ElmanMemory, options=ElmanOptions)  # class and settings, one call
    try:
        MemoryConfig.from_any({"kind": "elman", "nonlinearity": "sigmoid"})
    except ValueError as err:
        print(f"elman: a bad setting is refused: {err}")
    config = MemoryConfig.from_any({"kind": "elman", "hidden_size": 16, "nonlinearity": "relu"})
    assert MemoryConfig.from_any(config.to_dict()) == config  # what a run key stores reads back
    print(f"elman: {config.to_dict()}")
    check_memory(build_memory(config, input_size=5))  # raises if it breaks the contract
    print("elman: passes the memory contract (pomdp_bench.memory.contract.check_memory)")

    settings = PPOSettings.tuned("TMaze-v1", seed=0)
    memory = {"kind": "elman", "hidden_size": 32}
    model = PPO("TMaze-v1", memory, env_kwargs={"corridor_length": 5}, settings=settings, device="cpu")
    model.learn(args.steps, progress_bar=True)
    print(f"elman: mean return {model.evaluate(100).mean():.3f} on TMaze-v1 (feedforward ceiling 0.5)")


if __name__ == "__main__":
    main()
