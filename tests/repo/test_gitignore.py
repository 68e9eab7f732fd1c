"""What the commands of the README and docs/ write into the checkout stays out of `git status`."""

import os
import shutil
import subprocess

import pytest

from devkit.offline_run import PROJECT_DIR

# make test (.venv and .cuda: links into the cache, devkit/cached_install.sh; build/slurm-roots:
# links to the Slurm roots, tests/slurm/build-roots.sh), verify (outputs.json), plan (plan/),
# report (results/). .venv and .cuda are named themselves, not a file inside: git refuses a path
# "beyond a symbolic link", and as a link the entry itself is what git status would show.
WRITTEN = [
    ".venv",
    ".cuda",
    "build/slurm-roots/sid",
    "outputs.json",
    "plan/graph.json",
    "plan/values/slurm-release.yaml",
    "results/nccl-report.md",
    "tests/__pycache__/conftest.cpython-311.pyc",
    ".pytest_cache/README.md",
]
needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not (PROJECT_DIR / ".git").exists(), reason="not a git checkout"
)


def ignored(path: str, cwd=PROJECT_DIR) -> bool:
    return subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=cwd).returncode == 0


@needs_git
@pytest.mark.parametrize("path", WRITTEN)
def test_what_the_readme_commands_write_is_ignored(path):
    assert ignored(path), f"{path} would show up in git status"


@needs_git
def test_sources_are_not_ignored():
    assert not ignored("devkit/plan.py")


@needs_git
@pytest.mark.parametrize("name", [".venv", ".cuda"])
def test_the_environment_links_are_ignored_as_links(tmp_path, name):
    """`git status` in a checkout where make test made .venv and .cuda links: untracked output
    would list them. The repository's .gitignore, in a repository where they are links."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(PROJECT_DIR / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / "cache").mkdir()
    os.symlink(tmp_path / "cache", tmp_path / name)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""


@needs_git
def test_a_directory_only_pattern_misses_the_link(tmp_path):
    """The failing case of the test above: `.venv/` matches a directory, never a link to one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".venv/\n")
    (tmp_path / "cache").mkdir()
    os.symlink(tmp_path / "cache", tmp_path / ".venv")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", ".venv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status.strip() == "?? .venv"
