# AGL Workbench — `make demo` and `make test` are all a newcomer needs.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
TORCH   ?= torch==2.13.0
# pytest-xdist workers for `make test` (2: the 2-core CI machine; `make test TEST_WORKERS=0` runs in one process)
TEST_WORKERS ?= 2

.PHONY: setup test demo bench lint-imports clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	# torch first, pinned: a bare requirement could pull a multi-GB CUDA build
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

lint-imports: setup
	$(VENV)/bin/lint-imports

test: setup lint-imports
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

demo: setup
	$(VENV)/bin/aglw demo

bench: setup
	QT_QPA_PLATFORM=offscreen $(PY) bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
