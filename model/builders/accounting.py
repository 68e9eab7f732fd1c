"""What Slurm's accounting database should hold for the stack's named users: the accounts, the
users with their default account and admin level, and one association per user in their account.
The registration Job (components/accounting_registration.py) ships this, as JSON, to
cluster_programs/accounting_registration.py, which makes slurmdbd hold exactly it with sacctmgr.

Shares are left to Slurm: an association added without a Fairshare gets 1 (sshare's RawShares
on the real test cluster, tests/slurm/test_accounting.py), so the accounts under root share the
cluster equally, and the users of an account share it equally; an admin's `sacctmgr modify` of a
share is kept by later `up`s, which look only at what is here. Accounts are created under root, marked with ORGANIZATION so that the
registration removes only associations in accounts it made (an admin's own accounts are left
alone). Pure functions; model/checks/users.py holds the users.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

from model.checks.users import User

# sacctmgr stores an account's Organization lower-cased (SchedMD/slurm src/sacctmgr/
# account_functions.c: strip_quotes(..., 1) for Organization): written lower-case here, so it is
# read back as written.
ORGANIZATION = "slinky-eks"
# The QOS slurmdbd creates with the cluster ("By default when a cluster is added to the database
# a default qos named normal is created": SchedMD/slurm doc/html/qos.shtml, tag slurm-26-05-3-1;
# https://slurm.schedmd.com/qos.html), given to every account the registration makes as its
# only and default QOS; AccountingStorageEnforce=qos then refuses a job asking for another.
DEFAULT_QOS = "normal"
# sacctmgr's AdminLevel values (sacctmgr(1), "AdminLevel": None, Operator, Administrator).
ADMINISTRATOR = "Administrator"
NO_ADMIN = "None"


@dataclass(frozen=True)
class SlurmUser:
    name: str
    default_account: str
    admin_level: str  # ADMINISTRATOR or NO_ADMIN


@dataclass(frozen=True)
class Desired:
    accounts: tuple[str, ...]  # sorted, each once
    users: tuple[SlurmUser, ...]  # sorted by name
    # (account, user): the one association of each user, in their account.
    associations: tuple[tuple[str, str], ...]


def desired_state(users: Sequence[User]) -> Desired:
    """The accounting records for `users` (already validated: unique names, model/checks/users.py)."""
    ordered = sorted(users, key=lambda u: u.name)
    return Desired(
        accounts=tuple(sorted({u.account for u in ordered})),
        users=tuple(SlurmUser(u.name, u.account, ADMINISTRATOR if u.admin else NO_ADMIN) for u in ordered),
        associations=tuple(sorted((u.account, u.name) for u in ordered)),
    )


def to_json(desired: Desired) -> str:
    """The ConfigMap's one file: canonical (sorted keys, no blanks), so the same users give the
    same bytes and the same Job name."""
    return json.dumps(
        {
            "organization": ORGANIZATION,
            "defaultQos": DEFAULT_QOS,
            "accounts": list(desired.accounts),
            "users": [
                {"name": u.name, "defaultAccount": u.default_account, "adminLevel": u.admin_level}
                for u in desired.users
            ],
            "associations": [{"account": a, "user": u} for a, u in desired.associations],
        },
        sort_keys=True,
        separators=(",", ":"),
    )
