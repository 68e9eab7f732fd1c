"""The cluster's named users: who logs in, under which UID, into which Slurm account. The `users`
key (model/checks/config_schema.py) is read into these; the login and worker identities, the homes on
the shared volume and the accounting registration are all derived from them, so a user is
declared once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from model.checks import rules
from model.checks.problems import Problem, error
from model.facts.contract import SHARED_MOUNT

# The root of Slurm's association tree, which slurmdbd makes with root's association when a
# cluster is added (https://slurm.schedmd.com/accounting.html); the registration neither makes
# nor cleans it, so no user of the stack's is put there.
SLURM_ROOT_ACCOUNT = "root"
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
    uid: int  # also the user's primary GID (a group of the same name)
    ssh_public_keys: tuple[str, ...]  # at least one
    account: str = DEFAULT_ACCOUNT  # the Slurm account the user's association is in
    admin: bool = False  # Slurm's AdminLevel=Administrator

    @property
    def home(self) -> str:
        return f"{HOMES}/{self.name}"


# The highest UID a named user may have: adduser's LAST_UID, the top of Debian's range for
# dynamically allocated user accounts (Debian Policy 9.2.2, as MIN_UID). Above it are the
# globally allocated accounts, `nobody` (65534) and systemd's dynamic users.
MAX_UID = 59999
# A login name every layer takes as it is: adduser's default NAME_REGEX "^[a-z][-a-z0-9_]*\$?$"
# (Debian adduser 3.134, adduser.conf(5)) without the trailing '$' of Samba machine accounts,
# which also keeps it inside shadow's useradd (shadow-maint/shadow libmisc/chkname.c at tag 4.13,
# is_valid_name) and POSIX's portable user names (XBD 3.437: the portable filename characters, no
# leading '-'); lower-case because Slurm's database forces user names to lower case unless
# slurmdbd runs with PreserveCaseUser (SchedMD/slurm doc/man/man1/sacctmgr.1, "user", tag
# slurm-26-05-3-1), so `Alice` would run jobs as a user sacctmgr knows as `alice`. At most 32
# characters: useradd's USER_NAME_MAX_LENGTH, the size of utmp's ut_user on Linux.
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_NAME_ALLOWED = (
    "a login name: a lower-case letter, then lower-case letters, digits, '_' or '-', at most "
    "32 characters (Slurm keeps user names in lower case)"
)
# The users and groups that already exist in the login and slurmd images: a user of the same name
# would be shadowed by the image's own entry (nsswitch reads the image's files first) and their
# group of the same name would collide with the image's. Debian's base-passwd passwd.master and
# group.master (base-passwd 3.6, which ubuntu:24.04 ships), then what the Slinky images add:
# `slurm` (SlinkyProject/containers schedmd/slurm/26.05/ubuntu24.04/Dockerfile, "Create
# SlurmUser") and the users of the packages installed there, openssh-server's `sshd` and sssd's
# `sssd`.
SYSTEM_USERS = (
    "root",
    "daemon",
    "bin",
    "sys",
    "sync",
    "games",
    "man",
    "lp",
    "mail",
    "news",
    "uucp",
    "proxy",
    "www-data",
    "backup",
    "list",
    "irc",
    "_apt",
    "nobody",
    "slurm",
    "sshd",
    "sssd",
)
SYSTEM_GROUPS = (
    "adm",
    "tty",
    "disk",
    "kmem",
    "dialout",
    "fax",
    "voice",
    "cdrom",
    "floppy",
    "tape",
    "sudo",
    "audio",
    "dip",
    "operator",
    "src",
    "shadow",
    "utmp",
    "video",
    "sasl",
    "plugdev",
    "staff",
    "users",
    "nogroup",
)
_FIELDS = ("name", "uid", "sshPublicKey", "account", "admin")
_SHAPE = "an object {name, uid, sshPublicKey (one key or a list), account?, admin?}"


def user_id(key: str, value: Any) -> list[Problem]:
    """A UID of Debian's range for people's accounts."""
    if rules.whole_number(MIN_UID, MAX_UID)(key, value):
        return [
            error(
                key,
                value,
                f"a whole number from {MIN_UID} to {MAX_UID}: below {MIN_UID} are the "
                f"system accounts, above {MAX_UID} the reserved ones (nobody is 65534)",
            )
        ]
    return []


def user_name(key: str, value: Any) -> list[Problem]:
    """A login name Linux and Slurm both take as it is, of no user or group the images have."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        return [error(key, value, _NAME_ALLOWED)]
    if value in SYSTEM_USERS or value in SYSTEM_GROUPS:
        return [
            error(
                key,
                value,
                f"a name the login and slurmd images do not already have: '{value}' is "
                "their own system user or group",
            )
        ]
    return []


def account_name(key: str, value: Any) -> list[Problem]:
    """A Slurm account name sacctmgr keeps as it is: its database is lower case (sacctmgr.1,
    NOTE under DESCRIPTION), and ',' separates the names of a list."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        return [
            error(
                key,
                value,
                "a Slurm account name: a lower-case letter, then lower-case letters, "
                "digits, '_' or '-', at most 32 characters",
            )
        ]
    if value == SLURM_ROOT_ACCOUNT:
        return [
            error(
                key,
                value,
                f"an account of the stack's own: {SLURM_ROOT_ACCOUNT!r} is the root of "
                "Slurm's account tree, which slurmdbd makes itself",
            )
        ]
    return []


def _keys(at: str, value: Any) -> tuple[tuple[str, ...], list[Problem]]:
    """sshPublicKey: one OpenSSH public key line or a non-empty list of them."""
    if isinstance(value, str):
        listed, where = [value], [at]
    elif isinstance(value, list) and value:
        listed, where = value, [f"{at}[{j}]" for j in range(len(value))]
    else:
        return (), [error(at, value, "an OpenSSH public key line, or a non-empty list of them")]
    problems: list[Problem] = []
    for key, line in zip(where, listed, strict=True):
        if not isinstance(line, str):
            problems.append(error(key, line, "an OpenSSH public key line"))
            continue
        problems += rules.ssh_public_key(key, line) or rules.not_the_example_ssh_key(key, line)
    return tuple(line.strip() for line in listed if isinstance(line, str)), problems


def _one_user(i: int, entry: Any) -> tuple[User | None, list[Problem]]:
    at = f"users[{i}]"
    if not isinstance(entry, dict):
        return None, [error(at, entry, _SHAPE)]
    problems = [
        error(f"{at}.{k}", entry[k], f"not a user field; fields: {', '.join(_FIELDS)}")
        for k in entry
        if k not in _FIELDS
    ]
    problems += user_name(f"{at}.name", entry.get("name"))
    problems += user_id(f"{at}.uid", entry.get("uid"))
    keys, found = _keys(f"{at}.sshPublicKey", entry.get("sshPublicKey"))
    problems += found
    if "account" in entry:
        problems += account_name(f"{at}.account", entry["account"])
    if "admin" in entry:
        problems += rules.true_or_false(f"{at}.admin", entry["admin"])
    if any(p.is_error for p in problems):
        return None, problems
    return User(
        entry["name"], entry["uid"], keys, entry.get("account", DEFAULT_ACCOUNT), entry.get("admin", False)
    ), problems


def users_from_config(raw: Any) -> tuple[list[User], list[Problem]]:
    """The users of a `users` value (a list of objects); every problem at once, each naming
    users[i].<field>. Only users whose own fields are valid come back."""
    if not isinstance(raw, list):
        return [], [error("users", raw, f"a list of users, each {_SHAPE}")]
    problems: list[Problem] = []
    users = []
    for i, entry in enumerate(raw):
        user, found = _one_user(i, entry)
        problems += found
        if user is not None:
            users.append(user)
    for field in ("name", "uid"):
        seen: dict[Any, int] = {}
        for i, entry in enumerate(raw):
            value = entry.get(field) if isinstance(entry, dict) else None
            if value is None or isinstance(value, (dict, list)):
                continue
            if value in seen:
                problems.append(
                    error(
                        f"users[{i}].{field}",
                        value,
                        f"a {field} no other user has (users[{seen[value]}] already has {value!r})",
                    )
                )
            else:
                seen[value] = i
    return users, problems
