"""devkit/cached_install.sh in a copy of the repository's install inputs, with an interpreter that
records what it is asked (creating a venv, pip installs) instead of downloading: one build per
key, a new key for a changed input, an unfinished build never taken for a finished one, one build
when two run at once, a directory make test did not write left alone."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from devkit.offline_run import PROJECT_DIR

INPUTS = [
    "requirements.txt",
    "requirements-dev.txt",
    "image/finetune-requirements.txt",
    "requirements-cuda.txt",
]


@pytest.fixture
def checkout(tmp_path):
    """A checkout with the script and its inputs, a cache beside it, and the recording interpreter."""
    repo = tmp_path / "repo"
    for name in ["devkit/cached_install.sh", *INPUTS]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_DIR / name, repo / name)
    python = tmp_path / "python"
    python.write_text(
        textwrap.dedent(f"""\
        #!/bin/bash
        # -m venv DIR: a venv whose python is this script; -m pip: recorded, then PIP_EXIT.
        if [ "$1" = -m ] && [ "$2" = venv ]; then
          mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && echo "venv $3" >> "$RECORD"; exit 0
        fi
        if [ "$1" = -m ] && [ "$2" = pip ]; then
          echo "pip ${{*:3}}" >> "$RECORD"
          while [ $# -gt 0 ]; do [ "$1" = --target ] && mkdir -p "$2/nvidia/cu13/lib"; shift; done
          sleep "${{PIP_SECONDS:-0}}"; exit "${{PIP_EXIT:-0}}"
        fi
        exec {sys.executable} "$@"
        """)
    )
    python.chmod(0o755)
    env = {
        **os.environ,
        "PYTHON": str(python),
        "SLINKY_EKS_CACHE": str(tmp_path / "cache"),
        "RECORD": str(tmp_path / "record"),
    }
    return repo, env, tmp_path / "record"


def install(repo, env, kind="venv", **extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(repo / "devkit/cached_install.sh"), kind],
        cwd=repo,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_one_build_per_key_and_a_new_key_for_a_changed_input(checkout):
    repo, env, record = checkout
    first = install(repo, env)
    assert first.returncode == 0, first.stderr
    built = os.readlink(repo / ".venv")
    assert (repo / ".venv/.complete").exists() and "venv" in record.read_text()
    assert "-r requirements.txt -r requirements-dev.txt" in record.read_text()
    record.unlink()
    again = install(repo, env)
    assert again.returncode == 0 and not record.exists() and os.readlink(repo / ".venv") == built
    with open(repo / "requirements-dev.txt", "a") as f:
        f.write("# a changed input\n")
    changed = install(repo, env)
    assert changed.returncode == 0 and os.readlink(repo / ".venv") != built and record.exists()


def test_an_unfinished_build_is_redone(checkout):
    repo, env, record = checkout
    failed = install(repo, env, PIP_EXIT="1")
    assert failed.returncode != 0 and not (repo / ".venv").exists()
    (key_dir,) = (p for p in (repo.parent / "cache/venv").iterdir() if p.is_dir())
    assert not (key_dir / ".complete").exists()
    redone = install(repo, env)
    assert redone.returncode == 0 and "built" in redone.stdout
    assert os.readlink(repo / ".venv") == str(key_dir) and (key_dir / ".complete").exists()


def test_two_checkouts_at_once_build_one_key_once(checkout, tmp_path):
    repo, env, record = checkout
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    runs = [
        subprocess.Popen(
            ["bash", str(r / "devkit/cached_install.sh"), "venv"],
            cwd=r,
            env={**env, "PIP_SECONDS": "1"},
            stdout=subprocess.PIPE,
            text=True,
        )
        for r in (repo, other)
    ]
    outs = [p.communicate(timeout=60)[0] for p in runs]
    assert [p.returncode for p in runs] == [0, 0]
    assert sum("built" in o for o in outs) == 1
    assert record.read_text().count("venv ") == 1
    assert os.readlink(repo / ".venv") == os.readlink(other / ".venv")


def test_cuda_is_linked_with_its_lib64(checkout):
    repo, env, record = checkout
    assert install(repo, env, "cuda").returncode == 1  # needs .venv first
    assert install(repo, env).returncode == 0
    cuda = install(repo, env, "cuda")
    assert cuda.returncode == 0, cuda.stderr
    assert (repo / ".cuda").is_symlink() and os.readlink(repo / ".cuda/nvidia/cu13/lib64") == "lib"
    assert "--no-deps --target" in record.read_text()


def test_a_directory_an_older_make_test_wrote_is_replaced(checkout):
    repo, env, record = checkout
    (repo / ".venv/bin").mkdir(parents=True)
    (repo / ".venv/.installed").touch()
    assert install(repo, env).returncode == 0 and (repo / ".venv").is_symlink()


def test_any_other_directory_is_left_alone_naming_it(checkout):
    repo, env, record = checkout
    (repo / ".venv").mkdir()
    (repo / ".venv/mine").touch()
    refused = install(repo, env)
    assert refused.returncode == 1 and ".venv is a directory make test did not write" in refused.stderr
    assert (repo / ".venv/mine").exists() and not record.exists()


def test_an_unknown_kind_names_what_is_allowed(checkout):
    repo, env, _ = checkout
    bad = install(repo, env, "conda")
    assert bad.returncode == 2 and "venv|cuda (got 'conda')" in bad.stderr
