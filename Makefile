# Two commands matter on a fresh machine: `make demo` and `make test`.
# Everything is installed into .venv from the pins in constraints.txt.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PLUGINS := $(wildcard plugins/*/pyproject.toml)
# The plugins' import packages (not their .egg-info) and test folders, for mypy.
PLUGIN_PACKAGES := $(filter-out %.egg-info,$(wildcard plugins/*/computedomain_*))
PLUGIN_TESTS := $(wildcard plugins/*/tests)
PYTEST_ARGS ?=

.PHONY: all venv system-deps bytecode demo test scenarios lint typecheck unit proto docs bench faults clean kube-bins test-kube

all: test

# System packages: python3 (>= 3.11) with venv and pip, make, git. kubectl is optional.
# Installed with apt-get when missing and we can (Debian/Ubuntu, as root).
system-deps:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "error: python3 >= 3.11 is required (found $$($(PYTHON) --version 2>&1))"; exit 1; }
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -m ensurepip --version >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq python3-venv python3-pip; \
	  else echo "error: install python3-venv and python3-pip (see README)"; exit 1; fi; }

# Editable installs in setuptools' "compat" mode: a .pth line that puts the source tree on
# sys.path. The default mode installs an import hook per project instead, and loading the four
# hooks (with pathlib, re and typing) was 5-6 ms of every Python process the simulation starts,
# the daemons' exec probes (one per second per forming daemon) among them.
EDITABLE := --config-settings editable_mode=compat
$(STAMP): pyproject.toml sim/pyproject.toml constraints.txt $(PLUGINS) | system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e '.[dev]'
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e sim
	@for p in $(dir $(PLUGINS)); do \
	  $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e $$p \
	  || exit 1; done
	touch $(STAMP)

venv: $(STAMP)

# Byte-compile our sources. pip compiles what it installs, but not an editable install's
# sources, and where PYTHONDONTWRITEBYTECODE is set (as in many CI images) Python never caches
# them: every process recompiles the package as it imports it. A simulated cluster starts
# dozens of processes (plugins, daemons, probes, CLIs), so this was a third of their start-up
# CPU. Up-to-date files are skipped, so it costs a second when nothing changed.
bytecode: venv
	$(PY) -m compileall -q -j 0 computedomain sim/computedomain_sim $(dir $(PLUGINS)) >/dev/null

# `computedomain demo`: two simulated racks, a ComputeDomain with a worker per node, a summary,
# teardown. Flags through DEMO_ARGS, e.g. DEMO_ARGS=--keep-running (kubectl while it runs).
demo: bytecode
	$(PY) -m computedomain.cli.main demo $(DEMO_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# The example plugins are checked as strictly as the package (their tests too).
MYPY := $(VENV)/bin/mypy computedomain sim/computedomain_sim $(PLUGIN_PACKAGES) $(PLUGIN_TESTS)
typecheck: venv
	$(MYPY)

# The whole suite, the simulation scenarios included (CI runs exactly this), with mypy running
# beside it: mypy uses one core for most of a minute, and the suite leaves that much idle
# while its clusters start. Both must pass; mypy's report follows the suite's.
test: lint bytecode
	@echo "mypy runs beside the suite; its report follows the suite's"
	@$(MYPY) > $(VENV)/mypy.log 2>&1 & mypy=$$!; \
	$(VENV)/bin/pytest -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS); suite=$$?; \
	wait $$mypy; typed=$$?; echo "== mypy"; cat $(VENV)/mypy.log; \
	test $$suite -eq 0 && test $$typed -eq 0

# Only the simulation scenario suite (tests/e2e modules marked `scenario`), e.g. after a change
# to the simulation.
scenarios: bytecode
	$(VENV)/bin/pytest -n 2 --dist loadgroup -m scenario tests/e2e $(PYTEST_ARGS)

unit: venv
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

proto: venv
	$(PY) -m computedomain.proto.generate

# docs/configuration.md from the programs' flag declarations (a test fails when it is stale).
docs: venv
	$(PY) -m computedomain.cli.docs

bench: bytecode
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The long fault set: every suite of tests/faults with more seeds, steps and examples; the runs
# over the simulated cluster go one after another on one worker (their xdist group). Ends with
# one line per cluster run (seed, faults by kind, violations).
faults: bytecode
	$(VENV)/bin/pytest -n 2 --dist loadgroup tests/faults --faults-long $(PYTEST_ARGS)

# The real control plane of `--control-plane kube` (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler at the versions sim/controlplane/go.mod pins), built with Go (>= 1.26; modules
# from the Go proxy) into a per-version cache outside the tree, by default
# ~/.cache/computedomain/kube-<version>-etcd-<version>/bin. Nothing is rebuilt while the cache
# matches the module's files; the first build is long (see README).
kube-bins:
	@sim/controlplane/build.sh

# The end-to-end scenarios that run on the real control plane too, run on it (built first).
# Not yet: those that need the embedded server's RBAC usage log (IP mode, leader election,
# least privilege) or its fault injection, the doctor's and the benchmarks'. slice_policy runs
# only here: the embedded server does not enforce ValidatingAdmissionPolicies.
KUBE_SCENARIOS := $(addprefix tests/e2e/test_,$(addsuffix .py,smoke channels teardown \
	two_domains failover restarts numnodes labelled_node host_imex_conflict workloads \
	slice_policy))
test-kube: bytecode kube-bins
	$(VENV)/bin/pytest -n 2 --dist loadgroup --control-plane=kube $(KUBE_SCENARIOS) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .sim .pytest_cache .mypy_cache .ruff_cache
