"""Train PPO with a GRU memory on T-Maze from Python, beside PPO without memory.

python examples/train_ppo_tmaze.py              # 30k steps each, about a minute per agent on one core
python examples/train_ppo_tmaze.py --steps 2000 # a quick look
"""

import argparse

from pomdp_bench import PPO, PPOSettings
from pomdp_bench.envs.cards import get_card

parser = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
)
parser.add_argument("--steps", type=int, default=30_000, help="env steps per agent")
args = parser.parse_args()

env_kwargs = {"corridor_length": 5}
ceiling = get_card("TMaze-v1").ceiling_for(env_kwargs)  # the best a memoryless policy can expect
settings = PPOSettings.tuned("TMaze-v1", seed=0)  # agents/ppo.yaml's entry for this env
for memory in ("gru", None):
    model = PPO("TMaze-v1", memory, env_kwargs=env_kwargs, settings=settings, device="cpu")
    model.learn(args.steps, progress_bar=True)
    returns = model.evaluate(100)
    print(
        f"{memory or 'none'}: mean return {returns.mean():.3f} over 100 episodes (feedforward ceiling {ceiling:.3f})"
    )
