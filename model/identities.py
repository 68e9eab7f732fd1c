"""The named users' passwd(5) and group(5) entries (model/users.py): what the login and every
worker must know so that a user's jobs run as them. Pure functions."""
from __future__ import annotations

from typing import Sequence

from model.users import User

# Login shell of every named user: present in every image.
SHELL = "/bin/bash"
# The password field: '*' matches no password (crypt(3) never yields it); only SSH keys log in.
NO_PASSWORD = "*"


def passwd_entries(users: Sequence[User]) -> list[str]:
    """One passwd(5) line per user: name:password:UID:GID:GECOS:home:shell, the primary group being
    the user's own (GID = UID)."""
    return [f"{u.name}:{NO_PASSWORD}:{u.uid}:{u.uid}:{u.name}:{u.home}:{SHELL}" for u in users]


def group_entries(users: Sequence[User]) -> list[str]:
    """One group(5) line per user, their own group: name:password:GID:members (none: a user is in
    their primary group by their passwd entry's GID)."""
    return [f"{u.name}:{NO_PASSWORD}:{u.uid}:" for u in users]
