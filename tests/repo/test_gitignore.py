"""What the commands of the README and docs/ write into the checkout stays out of `git status`."""
import shutil
import subprocess

import pytest

from devkit.offline_run import PROJECT_DIR

# make test (.venv), verify (outputs.json), plan (plan/), report (results/).
WRITTEN = [".venv/bin/python", "outputs.json", "plan/graph.json", "plan/values/slurm-release.yaml",
           "results/nccl-report.md", "tests/__pycache__/conftest.cpython-311.pyc", ".pytest_cache/README.md"]


@pytest.mark.parametrize("path", WRITTEN)
def test_what_the_readme_commands_write_is_ignored(path):
    if shutil.which("git") is None or not (PROJECT_DIR / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=PROJECT_DIR)
    assert result.returncode == 0, f"{path} would show up in git status"


def test_sources_are_not_ignored():
    if shutil.which("git") is None or not (PROJECT_DIR / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "--no-index", "-q", "devkit/plan.py"], cwd=PROJECT_DIR)
    assert result.returncode == 1
