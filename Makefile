# One-command set-up: every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install shell demo test coverage fuzz bench validate docs clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]'
	touch $(STAMP)

install: $(STAMP)
	@echo "installed. Next, put wsemoe on your PATH in this shell:"
	@echo "    source $(BIN)/activate"
	@echo "(or run 'make shell' for a shell with it, or call $(BIN)/wsemoe directly)"

# A subshell with .venv activated (exit to leave it).
shell: $(STAMP)
	@echo "wsemoe is on PATH in this shell; 'exit' leaves it"
	@VIRTUAL_ENV="$(CURDIR)/$(VENV)" PATH="$(CURDIR)/$(BIN):$$PATH" $${SHELL:-/bin/sh} -i

SWEEPS := quickstart bta_experts bta_topk bta_topk_cs3 bta_topk_pe moentwine_mapping moentwine_balance moentwine_scale moentwine_scale_balance moentwine_vs_nvl72 cerebras_serving

demo: $(STAMP)
	$(BIN)/wsemoe presets
	@for s in $(SWEEPS); do \
	  $(BIN)/wsemoe sweep sweeps/$$s.yaml --force && $(BIN)/wsemoe plot results/$$s || exit 1; \
	done
	$(BIN)/wsemoe compare results/bta_topk results/bta_topk_cs3 --metric tokens_per_s --plot results/compare_bta_topk_cs2_cs3.svg
	$(BIN)/wsemoe validate
	@echo "done: results/ holds every sweep and its plots/. To use wsemoe in this shell: source $(BIN)/activate"

# Layer contracts first (cheap), then the suite on every core (one test file per worker, so module
# fixtures are built once; the slowest files first, tests/conftest.py SLOWEST_FIRST). Property tests run the
# derandomized `ci` hypothesis profile (tests/conftest.py): same examples every run. Coverage is its own
# target: tracing every line (CLI subprocesses and workers included) takes the suite from 6.0 to 10.1
# CPU-minutes, and nothing in the suite asserts on it. wsemoe's bytecode is compiled first: the suite starts
# more than 100 CLI processes, and where PYTHONDONTWRITEBYTECODE is set (as on this machine) each of them compiled
# every module it imported again (0.5-0.9 s of a 1.3-2.3 s `wsemoe show`).
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m compileall -q wsemoe
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

# The same suite with line coverage of wsemoe/ (workers and CLI subprocesses too), the report printed last.
coverage: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m compileall -q wsemoe
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --cov --cov-report=term

# The fuzz tests, randomized, 10,000 examples each (about 40 minutes on the shared 2-core machine); nothing is stored.
fuzz: $(STAMP)
	$(BIN)/python -m pytest tests/test_fuzz.py --hypothesis-profile=fuzz --hypothesis-show-statistics $(FUZZ_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/bench_sweep.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_mesh.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_serving.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_streaming.py $(BENCH_ARGS)

validate: $(STAMP)
	$(BIN)/wsemoe validate

# The generated parts of the docs (validate record in docs/sources.md and docs/reproductions.md, docs/config.md); tests fail when stale.
docs: $(STAMP)
	$(BIN)/python tools/update_docs.py

clean:
	rm -rf $(VENV) results/*/ results/*.svg .pytest_cache .coverage
