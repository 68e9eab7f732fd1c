# The commands of the README:
#   make test      install everything the tests need, then run every test
#   make test-fast the same without the tests that need the Slurm root filesystems (-m "not slurm and
#                  not slurm_root": the real cluster, and the tools taken from its roots) and the roots
#   make preview   `pulumi preview` on the dev stack
#   make up        `pulumi up` on the dev stack
#   make destroy   `pulumi destroy` on the dev stack
#   make security-review  checkov and parliament over the dev stack's offline plan, each finding held
#                  against devkit/security_triage.py (docs/security.md); not part of test or CI
# up/preview/destroy first check the Pulumi CLI, the AWS CLI and credentials, Docker with buildx
# (up with imageBuilder: local), a state passphrase and this machine's address inside the API
# endpoint's allowed blocks (tools/preflight.sh says how to get what is missing), then install
# only what the program needs (requirements.txt).
PYTHON ?= python3
VENV := .venv
# The DLC's CUDA 13.3 nvcc and torch's NCCL from PyPI wheels (requirements-cuda.txt), laid out as a CUDA_HOME.
CUDA := .cuda
STACK ?= dev
# The state lives where `pulumi login` (or PULUMI_BACKEND_URL) says: a team's shared backend
# (docs/ci.md#state-a-team-shares); with nothing chosen, the preflight logs in to this machine's
# ~/.pulumi-slinky-eks and says so. Its secrets (the kubeconfig) are encrypted with
# PULUMI_CONFIG_PASSPHRASE. An empty one only on purpose:
# `make up ALLOW_EMPTY_PASSPHRASE=1`.
ALLOW_EMPTY_PASSPHRASE ?=
ifeq ($(ALLOW_EMPTY_PASSPHRASE),1)
export PULUMI_CONFIG_PASSPHRASE ?=
endif
PREFLIGHT = STACK=$(STACK) ALLOW_EMPTY_PASSPHRASE=$(ALLOW_EMPTY_PASSPHRASE) bash tools/preflight.sh

.PHONY: test test-fast environment up preview destroy slurm-roots security-review reference-data

# What `pulumi up` runs the program with (Pulumi.yaml: runtime virtualenv .venv).
$(VENV)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# .venv and .cuda are links into a cache outside the checkout, keyed by their inputs (requirement
# files, interpreter): a new clone or worktree reuses them (devkit/cached_install.sh).
environment:
	PYTHON=$(PYTHON) bash devkit/cached_install.sh venv
	PYTHON=$(PYTHON) bash devkit/cached_install.sh cuda

# Root filesystems for the test clusters' Slurm (sid 26.05, trixie 24.11 + PMIx), in the same
# cache, rebuilt only when tests/slurm/build-roots.sh or a package list changes.
slurm-roots:
	bash tests/slurm/build-roots.sh

# pytest-xdist workers (-n: a number, or auto = one per CPU); the real-cluster tests run one
# cluster at a time on one of them (tests/support/scheduling.py, through tests/conftest.py).
JOBS ?= auto
PYTEST = $(VENV)/bin/python -m pytest -n $(JOBS)
# The CI workflows teams copy (.github/workflows): actionlint, with the venv's shellcheck over
# their run: scripts (pyflakes off: they run no Python scripts inline).
ACTIONLINT = $(VENV)/bin/actionlint -shellcheck=$(VENV)/bin/shellcheck -pyflakes=

test: environment slurm-roots
	$(VENV)/bin/python -m ruff format --check .
	$(VENV)/bin/python -m ruff check .
	$(ACTIONLINT)
	$(PYTEST)

test-fast: environment
	$(VENV)/bin/python -m ruff format --check .
	$(VENV)/bin/python -m ruff check .
	$(ACTIONLINT)
	$(PYTEST) -m "not slurm and not slurm_root"

# The scanners live in a cached virtualenv of their own (devkit/security_tools.sh), never in .venv.
# Exits 1 while a finding is unexplained; the report is build/security-review/report.txt.
security-review:
	@PYTHON=$(PYTHON) bash devkit/cached_install.sh venv
	$(VENV)/bin/python -m devkit.security_review --out build/security-review

up:
	@$(PREFLIGHT) up
	@$(MAKE) --no-print-directory $(VENV)/.runtime
	pulumi stack select --create $(STACK)
	pulumi up --stack $(STACK)

preview:
	@$(PREFLIGHT) preview
	@$(MAKE) --no-print-directory $(VENV)/.runtime
	pulumi stack select --create $(STACK)
	pulumi preview --stack $(STACK)

destroy:
	@$(PREFLIGHT) destroy
	pulumi destroy --stack $(STACK)

# The reference data for a checkout with no ../shared/ref beside it: fetched from the upstream chart
# repositories, git tags and PyPI, each checked against its pinned digest (devkit/reference_fetch.py),
# into the cache the tests look in last. MIRROR=<url> takes everything from one mirror instead.
reference-data:
	@PYTHON=$(PYTHON) bash devkit/cached_install.sh venv
	$(VENV)/bin/python -m devkit.reference_fetch $(if $(MIRROR),--mirror $(MIRROR))
