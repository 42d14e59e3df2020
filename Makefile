# Set-up and the two Quickstart commands.  `make run` and `make test` each build
# the virtual environment first if it is missing or older than pyproject.toml.
#
# torch is pinned here, not in pyproject.toml: `torch==2.13.0` is a CPU build that
# pip takes from local disk on our machines, while an unpinned torch can pull a
# multi-GB CUDA build. Elsewhere, choose your own build, e.g.
#   make test TORCH_SPEC="torch>=2.2" TORCH_PIP_ARGS="--index-url <your CPU wheel index>"
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
EXTRAS ?= dev,sb3,tensorboard,ray,browser,popgym,docs
BIN := $(VENV)/bin

.PHONY: setup run smoke demo test test-kernels bench lint docs clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

# The main job: the memory suite (resumable: rerun to continue; `--dry-run` estimates its time).
run: setup
	$(BIN)/python -m pomdp_bench.run --suite memory

smoke: setup
	$(BIN)/python -m pomdp_bench.run --suite smoke

demo: setup
	$(BIN)/python -m pomdp_bench.demo

# The tests run on every core (pytest-xdist), one test file per worker at a time so that a
# file's module fixtures are built once; `make test PYTEST_WORKERS=0` runs them in one process.
PYTEST_WORKERS ?= auto
test: setup
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

# The trajectory-dependent tests under other CPU kernel settings (see scripts/kernel_settings.sh);
# KERNELS picks a subset, e.g. `make test-kernels KERNELS=sse41`.
KERNELS ?=
test-kernels: setup
	PYTHON=$(BIN)/python PYTEST_WORKERS=$(PYTEST_WORKERS) scripts/kernel_settings.sh $(KERNELS)

bench: setup
	$(BIN)/python -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,ops

# The docs site into docs/_build/html, as CI builds it (tests/test_docs.py): warnings fail.
docs: setup
	$(BIN)/python -m sphinx -b html -W --keep-going -n docs docs/_build/html

lint: setup
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks .ruff_cache docs/_build docs/_generated
