# The two commands of the README's quick start:
#   make test   install everything the tests need, then run every test
#   make up     `pulumi up` on the dev stack (needs AWS credentials, the Pulumi CLI, Docker)
PYTHON ?= python3
VENV := .venv
STACK ?= dev
# Local state unless you `pulumi login` elsewhere (Pulumi.yaml backend.url). The dev stack holds
# no secrets of its own; state secrets (kubeconfig) are encrypted with this passphrase.
export PULUMI_CONFIG_PASSPHRASE ?=

.PHONY: test up preview destroy slurm-roots

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	touch $@

# Root filesystems for the test clusters' Slurm (sid 26.05, trixie 24.11 + PMIx), rebuilt only
# when tests/build-slurm-roots.sh or a package list changes.
slurm-roots:
	bash tests/build-slurm-roots.sh

test: $(VENV)/.installed slurm-roots
	$(VENV)/bin/python -m ruff check .
	$(VENV)/bin/python -m pytest

up: $(VENV)/.installed
	pulumi stack select --create $(STACK)
	pulumi up --stack $(STACK)

preview: $(VENV)/.installed
	pulumi stack select --create $(STACK)
	pulumi preview --stack $(STACK)

destroy:
	pulumi destroy --stack $(STACK)
