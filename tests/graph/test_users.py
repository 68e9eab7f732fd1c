"""Named users (`users`): read into StackConfig.users, absent from a stack that does not set it,
and every bad entry refused before any resource, naming users[i].<field>, all at once."""

import pytest

from devkit.offline_run import run_program
from model.checks import users
from model.checks.rules import EXAMPLE_SSH_KEY
from tests.support.program import rejected

ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L alice@laptop"
BOB_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXN bob@laptop"
ALICE = {"name": "alice", "uid": 2001, "sshPublicKey": ALICE_KEY, "account": "vision", "admin": True}
BOB = {"name": "bob", "uid": 2002, "sshPublicKey": [BOB_KEY, ALICE_KEY]}


def test_users_are_read_with_their_defaults():
    found, problems = users.users_from_config([ALICE, BOB])
    assert problems == []
    assert found == [
        users.User("alice", 2001, (ALICE_KEY,), "vision", True),
        users.User("bob", 2002, (BOB_KEY, ALICE_KEY), users.DEFAULT_ACCOUNT, False),
    ]


def test_a_stack_with_users_deploys():
    graph = run_program("dev", {"users": [ALICE, BOB]})
    assert graph.error is None and graph.resources


def _refused(entries) -> str:
    return rejected(users=entries)


@pytest.mark.parametrize("name", ["root", "slurm", "sshd", "nobody", "sudo", "users"])
def test_a_user_named_as_a_system_user_or_group_of_the_images_is_refused(name):
    msg = _refused([{**ALICE, "name": name}])
    assert f"slinky-eks:users[0].name = {name!r}" in msg and "their own system user or group" in msg


@pytest.mark.parametrize("uid", [0, 999, 60000, 65534, "2001", 2001.5, True, None])
def test_a_uid_outside_the_range_of_peoples_accounts_is_refused(uid):
    msg = _refused([{**ALICE, "uid": uid}])
    assert f"users[0].uid = {uid!r}: a whole number from 1000 to 59999" in msg


def test_the_lowest_and_highest_uids_pass():
    assert users.users_from_config([{**ALICE, "uid": 1000}, {**BOB, "uid": 59999}])[1] == []


def test_duplicate_names_are_refused():
    msg = _refused([ALICE, {**BOB, "name": "alice"}])
    assert "users[1].name = 'alice': a name no other user has (users[0] already has 'alice')" in msg


def test_duplicate_uids_are_refused():
    msg = _refused([ALICE, {**BOB, "uid": 2001}])
    assert "users[1].uid = 2001: a uid no other user has (users[0] already has 2001)" in msg


# Each refused by a layer: Slurm lower-cases (Alice), adduser's NAME_REGEX wants a letter first
# (1st, _x, -x), no layer takes '.', '@', ' ' or ':' in adduser's default (a.b, a@b, "a b", a:b),
# 33 characters is past useradd's limit, '$' is a machine account.
@pytest.mark.parametrize(
    "name", ["Alice", "1st", "_x", "-x", "a.b", "a@b", "a b", "a:b", "a" * 33, "pc$", "", 7]
)
def test_a_name_linux_or_slurm_refuses_is_refused(name):
    msg = _refused([{**ALICE, "name": name}])
    assert f"users[0].name = {name!r}: a login name" in msg


def test_a_name_of_32_characters_passes():
    assert users.users_from_config([{**ALICE, "name": "a" * 32}])[1] == []


@pytest.mark.parametrize(
    "key",
    [
        "ssh-ed25519",
        "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L",
        "ssh-ed25519 not-base64!",
    ],
)
def test_a_malformed_key_is_refused(key):
    msg = _refused([{**ALICE, "sshPublicKey": key}])
    assert f"users[0].sshPublicKey = {key!r}: an OpenSSH public key line" in msg


def test_a_malformed_key_in_a_list_is_refused_by_its_place():
    msg = _refused([{**BOB, "sshPublicKey": [BOB_KEY, "ssh-ed25519"]}])
    assert "users[0].sshPublicKey[1] = 'ssh-ed25519': an OpenSSH public key line" in msg


def test_a_private_key_is_refused_without_showing_it():
    msg = _refused([{**ALICE, "sshPublicKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRET"}])
    assert (
        "users[0].sshPublicKey: this is a private key (value withheld)" in msg and "SECRETSECRET" not in msg
    )


@pytest.mark.parametrize("keys", [[], None, 7])
def test_a_user_without_a_key_is_refused(keys):
    msg = _refused([{**ALICE, "sshPublicKey": keys}])
    assert f"users[0].sshPublicKey = {keys!r}: an OpenSSH public key line, or a non-empty list" in msg


def test_the_example_key_as_a_users_key_warns():
    example = f"ssh-ed25519 {EXAMPLE_SSH_KEY} x"
    found, problems = users.users_from_config([{**ALICE, "sshPublicKey": example}])
    assert found and [p.level for p in problems] == ["warning"]
    assert "users[0].sshPublicKey is the example key" in problems[0].message


@pytest.mark.parametrize("account", ["Vision", "a,b", "", 3])
def test_an_account_slurm_would_change_or_split_is_refused(account):
    msg = _refused([{**ALICE, "account": account}])
    assert f"users[0].account = {account!r}: a Slurm account name" in msg


def test_slurms_root_account_is_refused():
    assert "users[0].account = 'root': an account of the stack's own" in _refused(
        [{**ALICE, "account": "root"}]
    )


def test_admin_must_be_true_or_false():
    assert "users[0].admin = 'yes': true or false" in _refused([{**ALICE, "admin": "yes"}])


def test_an_unknown_user_field_is_refused_naming_the_fields():
    msg = _refused([{**ALICE, "sshKey": ALICE_KEY}])
    assert (
        "users[0].sshKey = " in msg
        and "not a user field; fields: name, uid, sshPublicKey, account, admin" in msg
    )


@pytest.mark.parametrize("value", [{"name": "alice"}, "alice", ["alice"]])
def test_users_must_be_a_list_of_objects(value):
    msg = _refused(value)
    assert "slinky-eks:users" in msg and ("list of users" in msg or "an object {name, uid" in msg)


def test_every_user_problem_comes_back_at_once():
    msg = _refused([{"name": "root", "uid": 10, "sshPublicKey": "x"}, {**BOB, "name": "Bob", "uid": 10}])
    assert msg.startswith("invalid stack configuration (6 problems)")
    for key in (
        "[0].name",
        "[0].uid",
        "[0].sshPublicKey",
        "[1].name",
        "[1].uid = 10: a whole",
        "[1].uid = 10: a uid no",
    ):
        assert f"slinky-eks:users{key}" in msg
