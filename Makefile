# One-command set-up: every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test fuzz bench validate clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]'
	touch $(STAMP)
	@echo "installed; use the CLI as $(BIN)/wsemoe, or run: source $(BIN)/activate"

install: $(STAMP)

SWEEPS := quickstart bta_experts bta_topk moentwine_mapping moentwine_balance moentwine_scale moentwine_scale_balance moentwine_vs_nvl72

demo: $(STAMP)
	$(BIN)/wsemoe presets
	@for s in $(SWEEPS); do \
	  $(BIN)/wsemoe sweep sweeps/$$s.yaml --force && $(BIN)/wsemoe plot results/$$s || exit 1; \
	done
	$(BIN)/wsemoe validate
	@echo "done: results/ holds every sweep and its plots/; run 'source $(BIN)/activate' to use wsemoe directly"

# Layer contracts first (cheap), then the suite with coverage; the total is printed last.
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest --cov --cov-report=term

bench: $(STAMP)
	$(BIN)/python bench/bench_sweep.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_mesh.py $(BENCH_ARGS)

validate: $(STAMP)
	$(BIN)/wsemoe validate

clean:
	rm -rf $(VENV) results/*/ .pytest_cache .coverage
