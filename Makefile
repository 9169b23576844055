# One entry point for people and CI. `make demo` opens the demo notebook, `make test` runs everything.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The tests build timm models, and timm needs torchvision, which pins torch exactly. On these machines
# torch 2.14.1 and torchvision 0.29.1 lie on disk (the local torch 2.13.0 CPU wheel fails to import
# PyPI's torchvision: "operator torchvision::nms does not exist"); an open `torch` requirement would
# download a multi-GB CUDA build. Override with `make setup TORCH="torch==X.Y torchvision==A.B"` (or
# have torch importable by $(PY): the venv then reuses it through --system-site-packages).
TORCH ?= torch==2.14.1 torchvision==0.29.1

.PHONY: setup js demo test lint typecheck test-py test-js test-ui notebooks bench chromium compat clean test-latest

setup: $(VENV)/.stamp src/torchxray/static/widget.js

$(VENV)/.stamp: pyproject.toml
	@if $(PY) -c "import torch" 2>/dev/null; then \
	  echo "reusing the torch already installed for $(PY)"; $(PY) -m venv --system-site-packages $(VENV); \
	else $(PY) -m venv $(VENV) && $(BIN)/pip install -q --upgrade pip && $(BIN)/pip install -q $(TORCH); fi
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The frontend's message types are generated from the Python declarations (one contract), into
# js/protocol_gen.ts, js/requests_gen.ts and js/tools_gen.ts; tests/test_protocol.py checks the committed copies
# and that js/ type-checks against them.
js/protocol_gen.ts: src/torchxray/protocol.py src/torchxray/_view/replies.py src/torchxray/_view/compare_types.py src/torchxray/_view/flow_types.py src/torchxray/_view/snapshot_types.py src/torchxray/_view/summary_types.py src/torchxray/_view/watch_types.py src/torchxray/_view/protocol_ts.py | $(VENV)/.stamp
	$(BIN)/python -m torchxray._view.protocol_ts js

src/torchxray/static/widget.js: node_modules/.stamp js/protocol_gen.ts $(wildcard js/*.ts js/*/*.ts js/*.css)
	npm run --silent build

js: src/torchxray/static/widget.js

# JupyterLab refuses to start as root unless told; containers and CI machines often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# The tour runs in a copy (.demo/, gitignored, kept between runs), so running its cells never dirties
# the tracked notebooks; the URL printed opens the first notebook, not the Launcher.
demo: setup
	mkdir -p .demo && for f in notebooks/*.ipynb; do test -e .demo/$${f##*/} || cp $$f .demo/; done
	cd .demo && $(abspath $(BIN))/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=. \
	  --LabApp.default_url=/lab/tree/01-explore.ipynb

# Browser tests need Debian's chromium; CI runs as root, so install it when missing.
chromium:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "browser tests need /usr/bin/chromium: run 'sudo apt-get install -y chromium'"; exit 1; fi; }

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: setup
	$(BIN)/mypy

test-js: setup
	npm run --silent test

# The examples in the modules' docstrings run too (tests/test_golden.py checks every public module has some).
DOCTEST := $(BIN)/pytest -q --doctest-modules src/torchxray

test-py: setup
	$(BIN)/pytest -m "not ui"
	$(DOCTEST)

test-ui: setup chromium
	$(BIN)/pytest -m ui

test: setup chromium
	$(MAKE) lint typecheck test-js
	$(DOCTEST)
	$(BIN)/pytest

# The kernel-side tests against another torch (default: the oldest pyproject allows), by hand.
COMPAT_TORCH ?= torch==2.4.1
compat:
	$(PY) -m venv .venv-compat
	.venv-compat/bin/pip install -q "$(COMPAT_TORCH)" "numpy<2" pytest pytest-timeout -e .
	.venv-compat/bin/pytest -m "not ui" --ignore=tests/ui --ignore=tests/test_notebooks.py --ignore=tests/test_binder.py

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .venv-compat .venv-latest node_modules src/torchxray/static/*.js src/torchxray/static/*.css

# The upstream lane (docs/guide/newest-releases.md), by hand, never part of `make test`: the newest
# releases of the libraries people install, in their own venv, against the library-facing tests and
# the sweep's sample. Every run upgrades to what the registry has that day. PIP_CONSTRAINT=/dev/null:
# a machine-wide pip constraint that caps torch at the build on disk would hold the lane back.
LATEST_VENV ?= .venv-latest
LATEST_TORCH ?= torch torchvision
LATEST_LIBS ?= transformers timm diffusers torchao peft open_clip_torch accelerate
LATEST_TESTS ?= tests/test_signature.py tests/test_first_call.py tests/test_probe_wrapped.py \
  tests/test_forms_real.py \
  tests/test_forms_shipped.py tests/test_patch_config.py tests/test_probe_flow.py \
  tests/test_probe_real.py tests/test_placement.py tests/test_tensor_subclasses.py \
  tests/test_summary.py tests/test_select.py tests/test_compile_check.py tests/test_sweep_sample.py
# The sweep's sample: three models per family, and the decoders whose attention kernels wraps
# (the fixed sample of tests/test_sweep_sample.py runs among the tests).
LATEST_SWEEP ?= --family transformers timm diffusers peft torchao open_clip --limit 3
LATEST_SWEEP_MODELS ?= --family transformers --match Qwen2ForCausalLM MistralForCausalLM \
  Gemma2ForCausalLM
# The widget's bundle is built once (`js`): some of these tests open an Explorer.
test-latest: js
	test -x $(LATEST_VENV)/bin/python || $(PY) -m venv $(LATEST_VENV)
	PIP_CONSTRAINT=/dev/null $(LATEST_VENV)/bin/pip install -q --upgrade $(LATEST_TORCH) $(LATEST_LIBS) \
	  safetensors jaxtyping torchinfo==1.8.0 treescope==0.1.10 pytest pytest-timeout
	PIP_CONSTRAINT=/dev/null $(LATEST_VENV)/bin/pip install -q -e .
	$(LATEST_VENV)/bin/python -m bench.latest
	$(LATEST_VENV)/bin/pytest -q -p no:cacheprovider $(LATEST_TESTS)
	$(LATEST_VENV)/bin/python -m bench.sweep $(LATEST_SWEEP)
	$(LATEST_VENV)/bin/python -m bench.sweep $(LATEST_SWEEP_MODELS)
