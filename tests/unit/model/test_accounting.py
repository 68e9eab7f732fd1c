"""The accounting records the users ask for (model/builders/accounting.py): accounts, users with their
default account and admin level, one association each; and the JSON the registration Job reads."""

import json

from cluster_programs.accounting_registration import Desired
from model.builders.accounting import ADMINISTRATOR, NO_ADMIN, ORGANIZATION, SlurmUser, desired_state, to_json
from model.checks.users import DEFAULT_ACCOUNT, User

KEY = ("ssh-ed25519 AAAA test",)
ALICE = User("alice", 2001, KEY)
BOB = User("bob", 2002, KEY, account="ml", admin=True)
CAROL = User("carol", 2003, KEY, account="ml")


def test_each_account_of_the_users_is_desired_once():
    assert desired_state([BOB, ALICE, CAROL]).accounts == (DEFAULT_ACCOUNT, "ml")


def test_a_user_without_an_account_is_in_the_default_account():
    assert desired_state([ALICE]).users == (SlurmUser("alice", DEFAULT_ACCOUNT, NO_ADMIN),)


def test_an_admin_user_gets_slurms_administrator_level():
    assert desired_state([BOB]).users == (SlurmUser("bob", "ml", ADMINISTRATOR),)


def test_each_user_has_one_association_in_their_account():
    assert desired_state([CAROL, ALICE, BOB]).associations == (
        (DEFAULT_ACCOUNT, "alice"),
        ("ml", "bob"),
        ("ml", "carol"),
    )


def test_no_users_desire_no_accounts():
    assert desired_state([]) == desired_state(())
    assert desired_state([]).accounts == () and desired_state([]).associations == ()


def test_the_json_is_the_same_whatever_the_order_of_the_users():
    assert to_json(desired_state([ALICE, BOB, CAROL])) == to_json(desired_state([CAROL, BOB, ALICE]))


def test_the_json_changes_with_a_users_admin_flag():
    demoted = User("bob", 2002, KEY, account="ml", admin=False)
    assert to_json(desired_state([ALICE, BOB])) != to_json(desired_state([ALICE, demoted]))


def test_the_registration_program_reads_the_json_back():
    desired = Desired.from_json(to_json(desired_state([ALICE, BOB])))
    assert desired.organization == ORGANIZATION and desired.accounts == {DEFAULT_ACCOUNT, "ml"}
    assert desired.users == {"alice": (DEFAULT_ACCOUNT, NO_ADMIN), "bob": ("ml", ADMINISTRATOR)}
    assert desired.associations == {(DEFAULT_ACCOUNT, "alice"), ("ml", "bob")}


def test_the_organization_is_lower_case_as_sacctmgr_stores_it():
    assert ORGANIZATION == ORGANIZATION.lower()
    assert json.loads(to_json(desired_state([ALICE])))["organization"] == ORGANIZATION
