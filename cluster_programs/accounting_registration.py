"""Make Slurm's accounting database hold the stack's users: each account, each user with their
default account and admin level, one association per user in their account. `pulumi up` runs it
in-cluster (the registration Job, components/accounting_registration.py) on every change of
`users`; it reads what slurmdbd holds, works out the difference, and runs only the sacctmgr
commands that close it, so a second run with the same users changes nothing.

What it removes: a user's association in an account the registration made (one marked with its
Organization) once the user is no longer in `users`, or is now in another account; then such an
account once no user of `users` is in it. Never a job record: slurmdbd keeps the jobs of a removed
association (shown on a real slurmdbd by tests/slurm/test_accounting.py), and sacct still lists
them. Accounts an admin made with sacctmgr (another Organization), their associations and every
share, limit and QOS an admin set are left as they are.

sacctmgr runs in the slurmctld container (Kubernetes exec, cluster_programs/incluster.py), as the
slurm user, which slurmdbd lets do anything (https://slurm.schedmd.com/accounting.html: "the
SlurmUser and root"), with the slurm.conf the operator wrote there; no key leaves that pod. The
commands and their options: sacctmgr(1) of Slurm 26.05 (SchedMD/slurm doc/man/man1/sacctmgr.1,
tag slurm-26-05-3-1): --immediate commits without asking, --noheader --parsable2 print rows as
fields joined by '|'; `add account ... Organization= QOS= DefaultQOS=`, `add user ... Account=
Cluster= DefaultAccount= AdminLevel=`, `modify user where Name= set ...`, `delete user where Name=
Account= Cluster=` (that one association; slurmdbd drops the user record with its last one),
`delete account where Name=`.

Standard library only: the Job runs it on a plain Python image.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

SACCTMGR = ["sacctmgr", "--immediate", "--noheader", "--parsable2"]
# The cluster appears in slurmdbd when slurmctld first connects ("as of 20.02, slurmctld will add
# the cluster to the database upon start": SchedMD/slurm doc/html/accounting.shtml,
# slurm-26-05-3-1); until then no account can be added to it.
POLL_SECONDS = 5.0

# argv after SACCTMGR -> its output; raises RegistrationFailed when sacctmgr fails.
Sacctmgr = Callable[[list[str]], str]


class RegistrationFailed(RuntimeError):
    """A sacctmgr command failed, or the cluster never appeared; the message says which."""


@dataclass(frozen=True)
class Desired:
    organization: str
    default_qos: str
    accounts: frozenset[str]
    users: dict[str, tuple[str, str]]  # name -> (default account, admin level)
    associations: frozenset[tuple[str, str]]  # (account, user)

    @classmethod
    def from_json(cls, text: str) -> "Desired":
        """model/accounting.py to_json's document."""
        d = json.loads(text)
        return cls(
            d["organization"],
            d["defaultQos"],
            frozenset(d["accounts"]),
            {u["name"]: (u["defaultAccount"], u["adminLevel"]) for u in d["users"]},
            frozenset((a["account"], a["user"]) for a in d["associations"]),
        )


@dataclass(frozen=True)
class Current:
    accounts: dict[str, str]  # name -> organization (account records are global)
    cluster_accounts: frozenset[str]  # the accounts with an association on the cluster
    users: dict[str, tuple[str, str]]  # name -> (default account, admin level)
    associations: frozenset[tuple[str, str]]  # (account, user): users' associations on the cluster


def _rows(output: str, fields: int) -> list[list[str]]:
    rows = []
    for line in output.splitlines():
        if line.strip():
            row = line.split("|")
            if len(row) != fields:
                raise RegistrationFailed(f"unexpected sacctmgr row {line!r}: expected {fields} fields")
            rows.append(row)
    return rows


def read_current(sacctmgr: Sacctmgr, cluster: str) -> Current:
    accounts = _rows(sacctmgr(["list", "account", "format=Account,Organization"]), 2)
    users = _rows(sacctmgr(["list", "user", "format=User,DefaultAccount,AdminLevel"]), 3)
    associations = _rows(sacctmgr(["list", "association", f"cluster={cluster}", "format=Account,User"]), 2)
    return Current(
        {name: org for name, org in accounts},
        frozenset(account for account, user in associations if not user),
        {name: (default, admin) for name, default, admin in users},
        frozenset((account, user) for account, user in associations if user),
    )


def plan(current: Current, desired: Desired, cluster: str) -> list[list[str]]:
    """The sacctmgr commands (argv after SACCTMGR) that make `current` into `desired`, in an order
    slurmdbd accepts: accounts before their users, a user's new default account before their old
    association is removed, an account's associations before the account. Nothing when equal."""
    commands: list[list[str]] = []
    # An account record without an association on the cluster gets one by the same command.
    for account in sorted(desired.accounts - current.cluster_accounts):
        commands.append(
            [
                "add",
                "account",
                account,
                f"Cluster={cluster}",
                f"Organization={desired.organization}",
                f"QOS={desired.default_qos}",
                f"DefaultQOS={desired.default_qos}",
            ]
        )
    for name, (account, admin) in sorted(desired.users.items()):
        if name not in current.users:
            commands.append(
                [
                    "add",
                    "user",
                    name,
                    f"Account={account}",
                    f"Cluster={cluster}",
                    f"DefaultAccount={account}",
                    f"AdminLevel={admin}",
                ]
            )
            continue
        if (account, name) not in current.associations:
            commands.append(["add", "user", name, f"Account={account}", f"Cluster={cluster}"])
        had_account, had_admin = current.users[name]
        if had_account != account:
            commands.append(["modify", "user", "where", f"Name={name}", "set", f"DefaultAccount={account}"])
        if had_admin != admin:
            commands.append(["modify", "user", "where", f"Name={name}", "set", f"AdminLevel={admin}"])
    managed = {a for a, organization in current.accounts.items() if organization == desired.organization}
    for account, user in sorted(current.associations - desired.associations):
        if account in managed:
            commands.append(
                ["delete", "user", "where", f"Name={user}", f"Account={account}", f"Cluster={cluster}"]
            )
    # The whole record, not only its association on the cluster: an account record outlives its
    # associations, and one left behind would be deleted again on every run. The database is the
    # stack's own, for its one cluster.
    for account in sorted(managed - desired.accounts):
        commands.append(["delete", "account", "where", f"Name={account}"])
    return commands


def wait_for_cluster(
    sacctmgr: Sacctmgr, cluster: str, timeout: float, clock=time.monotonic, sleep=time.sleep
) -> None:
    deadline = clock() + timeout
    while True:
        try:
            if cluster in sacctmgr(["list", "cluster", "format=Cluster"]).split():
                return
            why = f"slurmdbd does not list cluster {cluster} yet (slurmctld adds it when it first connects)"
        except RegistrationFailed as e:
            why = str(e)
        if clock() >= deadline:
            raise RegistrationFailed(f"after {timeout:.0f} s: {why}")
        sleep(POLL_SECONDS)


def register(
    sacctmgr: Sacctmgr,
    desired: Desired,
    cluster: str,
    timeout: float,
    log: Callable[[str], None] = print,
    **wait,
) -> list[list[str]]:
    """Wait for the cluster in slurmdbd, then run plan(); the commands that ran."""
    wait_for_cluster(sacctmgr, cluster, timeout, **wait)
    commands = plan(read_current(sacctmgr, cluster), desired, cluster)
    for argv in commands:
        log(f"sacctmgr {' '.join(argv)}")
        sacctmgr(argv)
    log(
        f"{len(commands)} change{'' if len(commands) == 1 else 's'} to the accounting database"
        if commands
        else "the accounting database already holds every account, user and association: no change"
    )
    return commands


def main(argv: list[str] | None = None) -> int:
    from cluster_programs import incluster

    p = argparse.ArgumentParser(prog="accounting_registration", description=__doc__.split("\n\n")[0])
    p.add_argument("--desired", required=True, help="model/accounting.py to_json's file")
    p.add_argument("--cluster", required=True, help="Slurm's ClusterName")
    p.add_argument("--namespace", required=True)
    p.add_argument("--slurm-pod", required=True, help="pod whose sacctmgr is used (exec)")
    p.add_argument("--slurm-container", required=True)
    p.add_argument("--timeout", type=float, required=True)
    args = p.parse_args(argv)
    try:
        api = incluster.Api.from_service_account(os.environ)

        def sacctmgr(command: list[str]) -> str:
            try:
                code, out = api.exec(
                    args.namespace, args.slurm_pod, args.slurm_container, [*SACCTMGR, *command]
                )
            except incluster.ApiError as e:  # the pod not up yet: wait_for_cluster retries
                raise RegistrationFailed(str(e)) from None
            if code != 0:
                raise RegistrationFailed(f"sacctmgr {' '.join(command)} exited {code}: {out.strip()[-300:]}")
            return out

        with open(args.desired) as f:
            desired = Desired.from_json(f.read())
        register(sacctmgr, desired, args.cluster, args.timeout)
    except (RegistrationFailed, incluster.ApiError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
