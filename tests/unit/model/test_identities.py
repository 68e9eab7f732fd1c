"""The named users' passwd(5) and group(5) entries, the files the pods read, and the two scripts
that merge them into a pod's own files, run here on a directory standing for the pod's root."""

import pathlib
import subprocess

from model.builders import identities
from model.builders.identities import group_entries, passwd_entries
from model.checks.users import User
from model.facts.contract import SCRIPT_PATH

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L alice@laptop"
ALICE = User("alice", 2001, (KEY,), "vision", True)
BOB = User("bob", 2002, (KEY, KEY.replace("alice", "bob")))
IMAGE_PASSWD = "root:x:0:0:root:/root:/bin/bash\nslurm:x:401:401::/home/slurm:/usr/sbin/nologin\n"
IMAGE_GROUP = "root:x:0:\nslurm:x:401:\n"


def test_a_users_passwd_entry_has_their_uid_own_group_home_and_bash():
    assert passwd_entries([ALICE]) == ["alice:*:2001:2001:alice:/shared/home/alice:/bin/bash"]


def test_each_passwd_entry_has_the_seven_fields_of_passwd5():
    assert all(len(line.split(":")) == 7 for line in passwd_entries([ALICE, BOB]))


def test_each_user_has_a_group_of_their_name_whose_gid_is_their_uid():
    assert group_entries([ALICE, BOB]) == ["alice:*:2001:", "bob:*:2002:"]


def test_no_user_has_a_password_only_keys_open_the_account():
    # '*' is no hash crypt(3) makes; 'x' would send pam_unix to a shadow entry the pods lack.
    assert {line.split(":")[1] for line in passwd_entries([ALICE, BOB])} == {"*"}


def test_no_users_no_entries():
    assert passwd_entries([]) == [] and group_entries([]) == []


def test_the_entry_files_end_each_line_with_a_newline():
    files = identities.entry_files([ALICE, BOB])
    assert files["passwd"] == "\n".join(passwd_entries([ALICE, BOB])) + "\n"
    assert files["group"].count("\n") == 2 and files["group"].endswith("\n")


def test_each_users_keys_are_a_file_named_after_them_one_key_a_line():
    assert identities.key_files([ALICE, BOB]) == {
        "alice": f"{KEY}\n",
        "bob": f"{KEY}\n{BOB.ssh_public_keys[1]}\n",
    }


def test_the_entries_hash_changes_with_a_uid_and_not_with_a_key():
    base = identities.entries_hash([ALICE])
    assert identities.entries_hash([User("alice", 2003, ALICE.ssh_public_keys)]) != base
    assert identities.entries_hash([User("alice", 2001, (BOB.ssh_public_keys[1],))]) == base


def test_sshd_reads_each_users_keys_by_a_command_as_nobody_and_keeps_the_default_files():
    assert identities.sshd_config(root_login=True) == (
        f"AuthorizedKeysCommand /usr/bin/cat {identities.KEYS_DIR}/%u\nAuthorizedKeysCommandUser nobody\n"
    )


def test_without_a_root_key_sshd_refuses_root():
    assert identities.sshd_config(root_login=False).splitlines()[-1] == "PermitRootLogin no"


def _pod_root(tmp_path: pathlib.Path, users) -> pathlib.Path:
    """A directory laid out as a pod's root: the image's files and the ConfigMap's directory."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text(IMAGE_PASSWD)
    (tmp_path / "etc/group").write_text(IMAGE_GROUP)
    entries = tmp_path / identities.ENTRIES_DIR.lstrip("/")
    entries.mkdir(parents=True)
    for name, text in identities.entry_files(users).items():
        (entries / name).write_text(text)
    (tmp_path / identities.MERGED_DIR.lstrip("/")).mkdir(parents=True)
    return tmp_path


def test_the_init_container_appends_the_entries_to_the_images_files(tmp_path):
    root = _pod_root(tmp_path, [ALICE, BOB])
    subprocess.run(["sh", "-c", identities.merge_script(str(root))], check=True)
    merged = root / identities.MERGED_DIR.lstrip("/")
    assert (merged / "passwd").read_text() == IMAGE_PASSWD + identities.entry_files([ALICE, BOB])["passwd"]
    assert (merged / "group").read_text() == IMAGE_GROUP + identities.entry_files([ALICE, BOB])["group"]
    assert oct((merged / "passwd").stat().st_mode & 0o777) == "0o644"


def _prolog(root: pathlib.Path) -> subprocess.CompletedProcess:
    script = root / "prolog.sh"
    script.write_text(identities.prolog_script(str(root)))
    return subprocess.run(["sh", str(script)], capture_output=True, text=True)


def test_the_prolog_merges_the_entries_into_the_workers_files(tmp_path):
    root = _pod_root(tmp_path, [ALICE])
    assert _prolog(root).returncode == 0
    assert (root / "etc/passwd").read_text() == IMAGE_PASSWD + identities.entry_files([ALICE])["passwd"]
    assert (root / "etc/group").read_text() == IMAGE_GROUP + identities.entry_files([ALICE])["group"]


def test_the_prolog_follows_the_configmap_without_keeping_a_removed_user(tmp_path):
    root = _pod_root(tmp_path, [ALICE, BOB])
    _prolog(root)
    entries = root / identities.ENTRIES_DIR.lstrip("/")
    for name, text in identities.entry_files([BOB]).items():
        (entries / name).write_text(text)
    _prolog(root)
    assert (root / "etc/passwd").read_text() == IMAGE_PASSWD + identities.entry_files([BOB])["passwd"]


def test_the_prolog_run_twice_changes_nothing(tmp_path):
    root = _pod_root(tmp_path, [ALICE])
    _prolog(root)
    first = (root / "etc/passwd").read_text()
    _prolog(root)
    assert (root / "etc/passwd").read_text() == first


def test_without_the_entries_the_prolog_leaves_the_files_and_succeeds(tmp_path):
    root = _pod_root(tmp_path, [ALICE])
    for name in identities.FILES:
        (root / identities.ENTRIES_DIR.lstrip("/") / name).unlink()
    result = _prolog(root)
    assert (result.returncode, result.stderr) == (0, "")
    assert (root / "etc/passwd").read_text() == IMAGE_PASSWD


def test_a_failed_refresh_is_logged_and_never_fails_the_prolog(tmp_path):
    # A Prolog that exits non-zero drains the node; the job runs under its credential's UID anyway.
    root = _pod_root(tmp_path, [ALICE])
    (root / "etc/passwd.slinky-eks-image").mkdir()  # cannot be read as a file
    result = _prolog(root)
    assert result.returncode == 0 and "could not refresh /etc/passwd" in result.stderr
    assert (root / "etc/passwd").read_text() == IMAGE_PASSWD


def test_the_prolog_sets_the_systems_search_path_before_its_first_command():
    # Slurm gives a Prolog no PATH (https://slurm.schedmd.com/prolog_epilog.html).
    commands = [line for line in identities.prolog_script().splitlines() if line and not line.startswith("#")]
    assert commands[0] == f"PATH={SCRIPT_PATH}"
