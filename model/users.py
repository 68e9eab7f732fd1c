"""The cluster's named users: who logs in, under which UID, into which Slurm account. The `users`
key (model/config_schema.py) is read into these; the login and worker identities, the homes on
the shared volume and the accounting registration are all derived from them, so a user is
declared once."""
from __future__ import annotations

from dataclasses import dataclass

from model.contract import SHARED_MOUNT

# The account a user without `account` is registered under.
DEFAULT_ACCOUNT = "default"
# The lowest UID a named user may have: below it are system accounts (Debian Policy 9.2.2,
# https://www.debian.org/doc/debian-policy/ch-opersys.html#uid-and-gid-classes).
MIN_UID = 1000
# Each user's home: on the shared volume, so login and every worker see the same files.
HOMES = f"{SHARED_MOUNT}/home"


@dataclass(frozen=True)
class User:
    name: str
    uid: int                              # also the user's primary GID (a group of the same name)
    ssh_public_keys: tuple[str, ...]      # at least one
    account: str = DEFAULT_ACCOUNT        # the Slurm account the user's association is in
    admin: bool = False                   # Slurm's AdminLevel=Administrator

    @property
    def home(self) -> str:
        return f"{HOMES}/{self.name}"
