"""The named users' rules (model/checks/users.py), one value at a time: each bad field comes back as
a problem naming users[i].<field>, all at once, and only valid users come back. The `users` key
through the whole program is specified in tests/graph/test_users.py."""

from model.checks.users import DEFAULT_ACCOUNT, User, account_name, user_id, user_name, users_from_config

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L alice@laptop"


def test_a_uid_is_debians_range_for_peoples_accounts():
    assert user_id("k", 1000) == [] and user_id("k", 59999) == []
    assert user_id("k", 999) and user_id("k", 60000) and user_id("k", 65534)


def test_a_login_name_is_lower_case_starting_with_a_letter_at_most_32_characters():
    assert user_name("k", "alice_2-b") == [] and user_name("k", "a" * 32) == []
    assert user_name("k", "Alice") and user_name("k", "2alice") and user_name("k", "a" * 33)


def test_a_name_the_images_already_have_is_refused():
    (problem,) = user_name("users[0].name", "slurm")
    assert "'slurm' is their own system user or group" in problem.message


def test_the_root_of_slurms_account_tree_is_not_a_users_account():
    (problem,) = account_name("users[0].account", "root")
    assert "root of Slurm's account tree" in problem.message


def test_a_valid_user_comes_back_with_the_default_account_and_no_admin():
    users, problems = users_from_config([{"name": "alice", "uid": 1001, "sshPublicKey": KEY}])
    assert problems == []
    assert users == [User("alice", 1001, (KEY,), DEFAULT_ACCOUNT, False)]
    assert users[0].home == "/shared/home/alice"


def test_every_bad_field_is_named_at_once_and_the_user_is_left_out():
    users, problems = users_from_config([{"name": "Alice", "uid": 5, "sshPublicKey": KEY, "shell": "zsh"}])
    assert users == []
    assert sorted(p.key for p in problems) == ["users[0].name", "users[0].shell", "users[0].uid"]


def test_a_name_or_uid_two_users_share_is_refused_on_the_second():
    raw = [
        {"name": "alice", "uid": 1001, "sshPublicKey": KEY},
        {"name": "alice", "uid": 1001, "sshPublicKey": KEY},
    ]
    _, problems = users_from_config(raw)
    assert [p.key for p in problems] == ["users[1].name", "users[1].uid"]
    assert "users[0] already has 'alice'" in problems[0].message


def test_users_that_are_not_a_list_are_refused_naming_the_shape():
    users, (problem,) = users_from_config({"name": "alice"})
    assert users == [] and problem.key == "users" and "a list of users" in problem.message
