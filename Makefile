# One-command set-up: every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench validate clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/wsemoe sweep sweeps/quickstart.yaml --force
	$(BIN)/wsemoe plot results/quickstart
	$(BIN)/wsemoe sweep sweeps/bta_experts.yaml --force
	$(BIN)/wsemoe plot results/bta_experts
	$(BIN)/wsemoe sweep sweeps/bta_topk.yaml --force
	$(BIN)/wsemoe plot results/bta_topk
	$(BIN)/wsemoe validate

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_sweep.py

validate: $(STAMP)
	$(BIN)/wsemoe validate

clean:
	rm -rf $(VENV) results/*/ .pytest_cache
