"""tests/slurm/build-roots.sh with a recording mmdebstrap: each root is built once per key into the
cache outside the checkout and linked at DIR/<suite>; a changed package list makes a new key; a
failed build leaves no root behind a link; a root an older script built in place is replaced; a
suite's pinned archives go into its root with its build script and the image's recipe it runs,
checked against their digests."""

import os
import shutil
import subprocess
import textwrap

import pytest

from devkit import reference_data
from devkit.offline_run import PROJECT_DIR

SCRIPT = PROJECT_DIR / "tests/slurm/build-roots.sh"
# The slurmd image's recipe for pyxis and enroot, which the sid root's build script runs.
RECIPE = "image/container-runtime.sh"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="build-roots.sh refuses to run without root")


@pytest.fixture
def tree(tmp_path):
    """The script, its package lists and the image's recipe where a checkout has them, a
    recording mmdebstrap on PATH, an empty cache."""
    here = tmp_path / "tests/slurm"
    shutil.copytree(PROJECT_DIR / "tests/slurm/roots", here / "roots")
    shutil.copy(SCRIPT, here / "build-roots.sh")
    (tmp_path / RECIPE).parent.mkdir()
    shutil.copy(PROJECT_DIR / RECIPE, tmp_path / RECIPE)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mmdebstrap").write_text(
        textwrap.dedent("""\
        #!/bin/bash
        # ... SUITE TARGET MIRROR: a root with one file, or MMDEBSTRAP_EXIT.
        target=${@: -2:1}
        echo "$target" >> "$RECORD"
        printf '%s\n' "$@" > "$RECORD.$(basename "$target")"
        [ "${MMDEBSTRAP_EXIT:-0}" = 0 ] || { mkdir -p "$target/half"; exit "$MMDEBSTRAP_EXIT"; }
        mkdir -p "$target/etc" && echo built > "$target/etc/os-release"
        """)
    )
    (bin_dir / "mmdebstrap").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLINKY_EKS_CACHE": str(tmp_path / "cache"),
        # The copied script has no ../shared/ref beside it.
        "SLINKY_EKS_REF": str(reference_data.ref_root()),
        "RECORD": str(tmp_path / "record"),
    }
    return here, tmp_path / "out", env, tmp_path / "record"


def build(here, out, env, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(here / "build-roots.sh"), str(out)],
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_each_root_is_built_once_into_the_cache_and_linked(tree):
    here, out, env, record = tree
    first = build(here, out, env)
    assert first.returncode == 0, first.stderr
    links = {p.name: os.readlink(p) for p in out.iterdir()}
    assert set(links) == {"sid", "trixie"} and all("/cache/slurm-roots/" in t for t in links.values())
    assert (out / "sid/.slinky-stamp").exists() and (out / "sid/etc/os-release").read_text() == "built\n"
    assert len(record.read_text().splitlines()) == 2
    again = build(here, out, env)
    assert again.returncode == 0 and again.stdout.count("up to date") == 2
    assert len(record.read_text().splitlines()) == 2


def test_a_changed_package_list_makes_a_new_key(tree):
    here, out, env, record = tree
    assert build(here, out, env).returncode == 0
    before, trixie = os.readlink(out / "sid"), os.readlink(out / "trixie")
    with open(here / "roots/sid.packages", "a") as f:
        f.write("# a changed list\n")
    assert build(here, out, env).returncode == 0
    assert os.readlink(out / "sid") != before and os.readlink(out / "trixie") == trixie
    assert len(record.read_text().splitlines()) == 3


def test_a_failed_build_leaves_no_root_and_no_link(tree):
    here, out, env, _ = tree
    failed = build(here, out, env, MMDEBSTRAP_EXIT="1")
    assert failed.returncode == 1 and "FAILED: mmdebstrap" in failed.stderr
    assert not (out / "sid").exists()
    assert not [p for p in (here.parent.parent / "cache/slurm-roots").iterdir() if p.is_dir()]


def test_a_root_built_in_place_by_an_older_script_becomes_a_link(tree):
    here, out, env, _ = tree
    (out / "sid").mkdir(parents=True)
    (out / "sid/.slinky-stamp").write_text("an older stamp\n")
    assert build(here, out, env).returncode == 0
    assert (out / "sid").is_symlink()


def test_a_suite_with_a_build_script_gets_its_pinned_archives_and_the_script_run_in_its_root(tree):
    here, out, env, record = tree
    assert build(here, out, env).returncode == 0
    (args,) = [p.read_text().splitlines() for p in record.parent.glob("record..sid-*")]
    hooks = [a.removeprefix("--customize-hook=") for a in args if a.startswith("--customize-hook=")]
    copied = next(h for h in hooks if h.startswith("copy-in ")).split()[1:]
    src = reference_data.ref_root() / "src"
    archives = [line.split()[1] for line in (here / "roots/sid.sources").read_text().splitlines()]
    recipe = str(here / "../.." / RECIPE)
    assert copied == [
        *(str(src / a) for a in archives),
        str(here / "roots/sid.build"),
        recipe,
        "/usr/src/build",
    ]
    assert any("sh ./sid.build" in h for h in hooks)
    (trixie,) = [p.read_text() for p in record.parent.glob("record..trixie-*")]
    assert "--customize-hook" not in trixie


def test_an_archive_that_does_not_match_its_pinned_digest_fails_the_build(tree, tmp_path):
    here, out, env, _ = tree
    ref = tmp_path / "ref"
    shutil.copytree(reference_data.ref_root() / "src", ref / "src")
    with open(ref / "src/pyxis-v0.24.0.tar.gz", "ab") as f:
        f.write(b"changed")
    failed = build(here, out, env, SLINKY_EKS_REF=str(ref))
    assert failed.returncode == 1
    assert "pyxis-v0.24.0.tar.gz: FAILED" in failed.stderr and "sid.sources" in failed.stderr
    assert not (out / "sid").exists()


def test_a_changed_build_script_makes_a_new_key(tree):
    here, out, env, _ = tree
    assert build(here, out, env).returncode == 0
    before = os.readlink(out / "sid")
    with open(here / "roots/sid.build", "a") as f:
        f.write("# a changed build\n")
    assert build(here, out, env).returncode == 0
    assert os.readlink(out / "sid") != before


def test_a_changed_image_recipe_makes_a_new_key(tree):
    # The recipe is the image's (image/Dockerfile runs it too): an edit there rebuilds the root
    # the container tests run in.
    here, out, env, _ = tree
    assert build(here, out, env).returncode == 0
    before, trixie = os.readlink(out / "sid"), os.readlink(out / "trixie")
    with open(here.parent.parent / RECIPE, "a") as f:
        f.write("# a changed recipe\n")
    assert build(here, out, env).returncode == 0
    assert os.readlink(out / "sid") != before and os.readlink(out / "trixie") == trixie


def test_a_missing_image_recipe_fails_the_build_naming_it(tree):
    here, out, env, _ = tree
    (here.parent.parent / RECIPE).unlink()
    failed = build(here, out, env)
    assert failed.returncode == 1 and "container-runtime.sh, which is missing" in failed.stderr
    assert not (out / "sid").exists()
