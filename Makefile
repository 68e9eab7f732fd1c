# The two commands of the README's quick start:
#   make test   install everything the tests need, then run every test
#   make up     `pulumi up` on the dev stack (needs AWS credentials, the Pulumi CLI, Docker)
PYTHON ?= python3
VENV := .venv
# CUDA 13.0 nvcc and NCCL from PyPI wheels (requirements-cuda.txt), laid out as a CUDA_HOME.
CUDA := .cuda
STACK ?= dev
# Local state unless you `pulumi login` elsewhere (Pulumi.yaml backend.url). The dev stack holds
# no secrets of its own; state secrets (kubeconfig) are encrypted with this passphrase.
export PULUMI_CONFIG_PASSPHRASE ?=

.PHONY: test up preview destroy slurm-packages

$(VENV)/.installed: requirements.txt requirements-dev.txt image/finetune-requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	touch $@

# nvcc's profile looks for its libraries in lib64, the toolkit's name; the wheels use lib.
$(CUDA)/.installed: requirements-cuda.txt $(VENV)/.installed
	rm -rf $(CUDA)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --target $(CUDA) -r requirements-cuda.txt
	ln -s lib $(CUDA)/nvidia/cu13/lib64
	touch $@

slurm-packages:
	bash tests/install-slurm-packages.sh

test: $(VENV)/.installed $(CUDA)/.installed slurm-packages
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
