"""image/repository-key.sh trusts a package repository's key file only when it holds exactly the
pinned primary key, and then writes that key alone to the keyring; any other file fails, naming
the primary keys it held. Keys made here with gpg, as a repository publishes one (armored)."""

import pathlib
import subprocess

import pytest

from model.builders.image_buildspec import dockerfile_instructions
from model.facts import versions
from tests.support.paths import REPO

SCRIPT = REPO / "image/repository-key.sh"


def _key(tmp_path: pathlib.Path, name: str) -> tuple[pathlib.Path, str]:
    """An armored public key file of a new signing key, and its fingerprint."""
    home = tmp_path / f"gnupg-{name}"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--batch", "--quiet", "--homedir", str(home)]
    subprocess.run(
        [
            *gpg,
            "--passphrase",
            "",
            "--quick-gen-key",
            f"{name} <{name}@example.com>",
            "ed25519",
            "sign",
            "never",
        ],
        check=True,
        capture_output=True,
    )
    listing = subprocess.run(
        [*gpg, "--with-colons", "--list-keys"], check=True, capture_output=True, text=True
    )
    fingerprint = next(line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr:"))
    exported = tmp_path / f"{name}.asc"
    exported.write_bytes(
        subprocess.run([*gpg, "--armor", "--export"], check=True, capture_output=True).stdout
    )
    return exported, fingerprint


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    return {name: _key(tmp, name) for name in ("pinned", "other")}


def _trust(key_file: pathlib.Path, fingerprint: str, keyring: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), str(key_file), fingerprint, str(keyring)], capture_output=True, text=True
    )


def _primaries(keyring: pathlib.Path) -> list[str]:
    home = keyring.parent / "gnupg-show"
    home.mkdir(mode=0o700)
    shown = subprocess.run(
        ["gpg", "--batch", "--homedir", str(home), "--show-keys", "--with-colons", str(keyring)],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    return [shown[i + 1].split(":")[9] for i, line in enumerate(shown) if line.startswith("pub:")]


def test_the_pinned_key_is_written_to_the_keyring(keys, tmp_path):
    key_file, fingerprint = keys["pinned"]
    result = _trust(key_file, fingerprint.lower(), tmp_path / "keyring.gpg")
    assert result.returncode == 0, result.stderr
    assert _primaries(tmp_path / "keyring.gpg") == [fingerprint]


def test_another_key_is_refused_naming_what_the_file_held(keys, tmp_path):
    other_file, other = keys["other"]
    _, pinned = keys["pinned"]
    result = _trust(other_file, pinned, tmp_path / "keyring.gpg")
    assert result.returncode == 1
    assert f"holds primary key(s) [{other}], not exactly the pinned {pinned}" in result.stderr
    assert not (tmp_path / "keyring.gpg").exists()


def test_a_file_with_the_pinned_key_and_another_is_refused(keys, tmp_path):
    (pinned_file, pinned), (other_file, _) = keys["pinned"], keys["other"]
    both = tmp_path / "both.asc"
    both.write_bytes(pinned_file.read_bytes() + other_file.read_bytes())
    result = _trust(both, pinned, tmp_path / "keyring.gpg")
    assert result.returncode == 1 and "not exactly the pinned" in result.stderr
    assert not (tmp_path / "keyring.gpg").exists()


def test_a_file_without_a_key_is_refused(keys, tmp_path):
    (tmp_path / "page.html").write_text("<html>moved</html>\n")
    result = _trust(tmp_path / "page.html", keys["pinned"][1], tmp_path / "keyring.gpg")
    assert result.returncode == 1 and "holds primary key(s) [none]" in result.stderr


def test_the_image_trusts_nvidias_repository_only_under_the_pinned_key():
    dockerfile = (REPO / "image/Dockerfile").read_text()
    runs = [
        " ".join(w)
        for i, w in dockerfile_instructions(dockerfile)
        if i == "RUN" and "repository-key.sh" in " ".join(w)
    ]
    assert len(runs) == 1
    trusted = runs[0].split("repository-key.sh", 1)[1].split()[:3]
    assert trusted == [
        "/tmp/libnvidia-container.gpgkey",
        '"${LIBNVIDIA_CONTAINER_KEY}"',
        "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg",
    ]
    assert "signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg" in runs[0]
    assert f"ARG LIBNVIDIA_CONTAINER_KEY={versions.LIBNVIDIA_CONTAINER_KEY}\n" in dockerfile
