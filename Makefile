# Every target that runs code depends on `setup`, which is idempotent and incremental:
# the venv is rebuilt only when pyproject.toml changes, the gRPC code only when a proto does.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PROTOS := $(shell find protos -name '*.proto')
PYTEST_ARGS ?=
# buf (lint and breaking-change checks of protos/) comes from the npm registry into .tools/.
BUF_VERSION := 1.75.0
BUF := .tools/node_modules/.bin/buf

.PHONY: setup up test test-fast chaos partitions bench soak load load-hosts capacity lint proto-release protos docs clean

setup: $(VENV)/.installed bg/.generated

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@# bg/ is generated after the install: the checkout on sys.path makes it importable (no
	@# setuptools "compat" editable mode, whose install prints a deprecation banner).
	$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "bgcluster-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	@touch $@

bg/.generated: $(PROTOS) infra/tools/protogen.py $(VENV)/.installed
	$(BIN)/python -m infra.tools.protogen

protos: $(VENV)/.installed
	$(BIN)/python -m infra.tools.protogen

# Generated docs: the settings reference (docs/settings.md) from the services' typed settings.
docs: setup
	$(BIN)/python -m infra.cli.settings_reference

up: setup
	$(BIN)/bgcluster up $(ARGS)

# The whole suite in two runs: everything but the whole-cluster tests on four xdist workers (as
# `make test-fast`: ~3 min, 9 serially), then tests/cluster in one process, alone on the box (~19
# min: a cluster's clocks are scaled to tens of milliseconds, and two clusters side by side, or
# the other tests beside one, made them flaky). Exit code 5 is "no test selected" (PYTEST_ARGS
# naming tests of one kind only). CI's budget is 30 minutes on 2 cores for setup, lint and this.
XDIST := -n 4 --dist loadscope
test: setup
	$(BIN)/python -m pytest -q -m "not e2e" $(XDIST) $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/python -m pytest -q -m e2e --durations=25 $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The developers' loop: everything but the whole-cluster tests (tests/cluster), on four workers: the
# tests wait on servers more than they compute (2 workers used ~46% of the two cores: 3.5 min;
# 4 workers: 2.4-2.6 min). `make test-fast XDIST=`: in one process.
test-fast: setup
	$(BIN)/python -m pytest -q -m "not e2e" $(XDIST) $(PYTEST_ARGS)

# The chaos test with more play between faults than `make test` gives it; prints the figures.
CHAOS_SECONDS ?= 20
chaos: setup
	BG_CHAOS_SECONDS=$(CHAOS_SECONDS) $(BIN)/python -m pytest -q -s tests/cluster/test_chaos.py

# Issue 42's partition suite with each fault held longer, in both event-log modes; prints the
# figures (what players saw per fault) and writes .partitions-<mode>.json. Needs root.
PARTITION_SECONDS ?= 8
PARTITION_MODES ?= kafka,embedded
partitions: setup
	BG_PARTITION_SECONDS=$(PARTITION_SECONDS) BG_PARTITION_MODES=$(PARTITION_MODES) \
		BG_PARTITION_OUT=$(CURDIR) $(BIN)/python -m pytest -q -s tests/cluster/test_partitions.py

bench: setup
	$(BIN)/python -m benchmarks

# Issue 14's soak: a Valkey Cluster, 2 gateways, 3 table replicas, TABLES live tables (two Play
# streams each) for MINUTES, a table replica and a Valkey primary killed on the way.
TABLES ?= 10000
MINUTES ?= 10
soak: setup
	$(BIN)/python -m benchmarks.soak --tables $(TABLES) --minutes $(MINUTES) --json .soak.json

# Locust (a master and WORKERS workers) against a local cluster it starts, or a deployment's
# gateway at TARGET (its operators' API at ADMIN; the operator's key in BG_LOAD_OPERATOR_KEY);
# prints a summary JSON, writes .load-runs/<run id>/report.html, fails on any correctness failure
# or error. make load USERS=60 DURATION=170 WORKERS=2 CHAOS=1 PROFILE=mix
# make load TARGET=gw.example:443 TLS=1 ADMIN=10.0.0.5:50057 OPERATOR=loadtest PROFILE=human
USERS ?= 40
SPAWN_RATE ?= 10
DURATION ?= 170
WORKERS ?= 1
PROFILE ?= stress
CHAOS ?=
TARGET ?=
ADMIN ?=
OPERATOR ?= admin
TLS ?=
load: setup
	$(BIN)/python -m loadtests.run --users $(USERS) --spawn-rate $(SPAWN_RATE) \
		--duration $(DURATION) --workers $(WORKERS) --profile $(PROFILE) $(if $(CHAOS),--chaos,) \
		$(if $(TARGET),--target $(TARGET) --admin $(ADMIN) --operator $(OPERATOR),) $(if $(TLS),--tls,)

# Issue 59's human-paced capacity of this machine: tables played at a person's pace, steps of
# TABLES, each judged over STEADY seconds (command p99 < 200 ms, clock lateness p99 < 100 ms in
# every 10 s window), the analysis on and off; writes .human-capacity.json (~1 hour).
CAPACITY_TABLES ?= 250,375,500,625
STEADY ?= 180
capacity: setup
	$(BIN)/python -m benchmarks.human_capacity --tables $(CAPACITY_TABLES) --steady $(STEADY)

# The load test against `bgcluster up --hosts` by address for longer than `make test` plays it
# (LOAD_SECONDS of load), with the ServiceDown drill (a table replica stopped past the alert's
# `for`: fired in the cluster's Prometheus, resolved after the restart), which `make test` skips.
LOAD_SECONDS ?= 120
load-hosts: setup
	BG_LOAD_TARGET_SECONDS=$(LOAD_SECONDS) BG_LOAD_TARGET_DRILL=1 $(BIN)/python -m pytest -q -s \
		tests/cluster/test_load_target.py

$(BUF):
	npm install --silent --no-audit --no-fund --prefix .tools @bufbuild/buf@$(BUF_VERSION)

# The released API image `make lint` checks changes against.
API_RELEASE ?= api-v2

lint: setup $(BUF)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd protos && ../$(BUF) lint && ../$(BUF) breaking --against releases/$(API_RELEASE).binpb

# Record the current API as the release later changes must stay compatible with (a new release
# that removes something: raise API_RELEASE and write what changed in protos/releases/CHANGES.md).
proto-release: $(BUF)
	cd protos && ../$(BUF) build -o releases/$(API_RELEASE).binpb

clean:
	rm -rf $(VENV) bg .data .tools .pytest_cache .mypy_cache .ruff_cache
