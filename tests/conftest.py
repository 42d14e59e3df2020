"""Shared test settings: one torch thread, headless rendering."""

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import torch

torch.set_num_threads(1)
