"""How the named users (model/checks/users.py) exist in the pods, without a directory server: the program
writes their passwd(5) and group(5) entries into a ConfigMap, and each pod that must know them adds
those entries to its image's own /etc/passwd and /etc/group, which every pod's NSS reads first
(`files`). The login pod's sssd, whose chart default is the proxy provider over `files`, then serves
the same entries (why this and not LDAP, sssd's files provider or nss_slurm:
docs/decisions/user-identities.md).

- The login and controller pods: an init container of the pod's own image writes the merged files
  into an emptyDir that the main container mounts over /etc/passwd and /etc/group. The init
  container names the entries' hash, so a change of users rolls these two pods (one replica each;
  slurmctld keeps its state and the running jobs).
- The workers: a Prolog merges them into the slurmd container's files before each job, from the
  ConfigMap mounted as a directory, which the kubelet keeps current; adding a user never rolls a
  GPU node, and a removed user's entry is gone at the node's next job.
- The users' SSH keys: a second ConfigMap, one file per user, which sshd reads through
  AuthorizedKeysCommand; it too stays current in the running login pod.

Pure functions; components/user_identities.py creates the ConfigMaps and the homes Job,
model/builders/slurm_values.py puts the rest into the Slurm release's values.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from model.checks.users import User
from model.facts.contract import SCRIPT_PATH

# Login shell of every named user: present in every image (Ubuntu's bash).
SHELL = "/bin/bash"
# The password field: '*' is no password at all (crypt(3) never yields it), so only the SSH keys
# open the account. Not 'x', which sends pam_unix to a shadow(5) entry the pods do not have: its
# account check would then fail through its helper (linux-pam/linux-pam v1.5.3
# modules/pam_unix/passverify.c get_account_info, is_pwd_shadowed; support.c _unix_verify_user:
# no shadow entry and an unshadowed field is PAM_SUCCESS).
NO_PASSWORD = "*"

# Where the pods see the program's entries: the ConfigMap's directory (workers, init containers).
ENTRIES_DIR = "/etc/slinky-eks/identities"
# Where the login pod's sshd finds each user's keys, one file named after the user.
KEYS_DIR = "/etc/ssh/slinky-eks-keys"
# The emptyDir the init container writes the merged files into.
MERGED_DIR = "/etc/slinky-eks/merged"
FILES = ("passwd", "group")
# Volume and container names in the pods.
ENTRIES_VOLUME = "slinky-eks-identities"
MERGED_VOLUME = "slinky-eks-identities-merged"
KEYS_VOLUME = "slinky-eks-ssh-keys"
INIT_CONTAINER = "identities"
# The Prolog script's name under prologScripts. The chart stores it as prolog-<name> in its
# ConfigMap (helm/slurm templates/controller/prolog-configmap.yaml) and the operator writes
# Prolog=prolog-<name> for it (internal/builder/controllerbuilder/controller_config.go), both at
# SlinkyProject/slurm-operator v1.2.1.
PROLOG_SCRIPT = "90-slinky-eks-identities.sh"


def passwd_entries(users: Sequence[User]) -> list[str]:
    """One passwd(5) line per user: name:password:UID:GID:GECOS:home:shell, the primary group being
    the user's own (GID = UID)."""
    return [f"{u.name}:{NO_PASSWORD}:{u.uid}:{u.uid}:{u.name}:{u.home}:{SHELL}" for u in users]


def group_entries(users: Sequence[User]) -> list[str]:
    """One group(5) line per user, their own group: name:password:GID:members. The member list is
    empty: a user is in their primary group by their passwd entry's GID."""
    return [f"{u.name}:{NO_PASSWORD}:{u.uid}:" for u in users]


def entry_files(users: Sequence[User]) -> dict[str, str]:
    """The identities ConfigMap's data: the passwd and group lines, each file newline-terminated."""
    return {
        "passwd": "".join(f"{line}\n" for line in passwd_entries(users)),
        "group": "".join(f"{line}\n" for line in group_entries(users)),
    }


def key_files(users: Sequence[User]) -> dict[str, str]:
    """The keys ConfigMap's data: each user's public keys, one per line, under their name (a login
    name is a valid ConfigMap key: model/checks/users.py allows [a-z0-9_-])."""
    return {u.name: "".join(f"{key}\n" for key in u.ssh_public_keys) for u in users}


def entries_hash(users: Sequence[User]) -> str:
    """12 hex digits of the passwd and group entries: what rolls the login and controller pods."""
    files = entry_files(users)
    return hashlib.sha256("".join(f"{k}\0{files[k]}\0" for k in FILES).encode()).hexdigest()[:12]


def sshd_config(root_login: bool) -> str:
    """The lines the LoginSet appends to sshd_config (extraSshdConfig): each user's keys read from
    KEYS_DIR by a command, beside the default AuthorizedKeysFile (root's
    /root/.ssh/authorized_keys, which the operator writes from rootSshAuthorizedKeys, and any keys
    a user adds in their home); root refused outright without a root key. sshd keeps the first
    value of a keyword, and these hold last in the file because neither the operator's lines nor
    the program's drop-in before them set these keywords (model/builders/login_sshd.py;
    tests/slurm/test_login_sshd.py reads the effective values)."""
    # A command, not AuthorizedKeysFile: StrictModes refuses a keys file under a directory others
    # may write, and a ConfigMap volume's directory is an emptyDir (mode 0777). The command must
    # be root's and not writable by others, takes the %u token, and runs as
    # AuthorizedKeysCommandUser (sshd_config(5), openssh-portable V_9_6_P1, Ubuntu 24.04's;
    # auth2-pubkey.c user_key_command_allowed2; misc.c subprocess, safe_path). A user without a
    # file there (root) makes cat fail, which sshd logs and skips.
    lines = [f"AuthorizedKeysCommand /usr/bin/cat {KEYS_DIR}/%u", "AuthorizedKeysCommandUser nobody"]
    if not root_login:
        lines.append("PermitRootLogin no")
    return "".join(f"{line}\n" for line in lines)


# Appends the program's entries to the image's own files. A POSIX shell script (the login and
# slurmctld images have bash; sh is enough). `root` is where it works: / in the pods.
def merge_script(root: str = "") -> str:
    """The init container's script: <image's file> + <program's entries> into MERGED_DIR."""
    return (
        f"set -eu; for f in {' '.join(FILES)}; do "
        f"cat {root}/etc/$f {root}{ENTRIES_DIR}/$f > {root}{MERGED_DIR}/$f.new; "
        f"chmod 0644 {root}{MERGED_DIR}/$f.new; mv {root}{MERGED_DIR}/$f.new {root}{MERGED_DIR}/$f; done"
    )


def prolog_script(root: str = "") -> str:
    """The workers' Prolog (runs as root in the slurmd container before each job's first step on
    the node): the image's files, kept aside on the first run, plus the program's current entries,
    each file replaced by a rename so a lookup never reads half of one. It always exits 0: a
    Prolog that fails drains the node (slurm.conf(5) Prolog), and without the refresh the job still
    runs under its own UID and groups, which the job credential carries."""
    return f"""#!/bin/sh
# slinky-eks: the named users' passwd and group entries (model/builders/identities.py).
PATH={SCRIPT_PATH}
entries={root}{ENTRIES_DIR}
for f in {" ".join(FILES)}; do
  [ -r "$entries/$f" ] || continue
  image={root}/etc/$f.slinky-eks-image
  if [ ! -e "$image" ]; then
    # Kept once per container: ln refuses to replace a copy another Prolog made first.
    cp {root}/etc/$f "$image.$$" && ln "$image.$$" "$image" 2>/dev/null
    rm -f "$image.$$"
  fi
  new={root}/etc/$f.slinky-eks-new.$$
  if cat "$image" "$entries/$f" > "$new" && chmod 0644 "$new" && mv -f "$new" {root}/etc/$f; then :; else
    echo "slinky-eks: could not refresh /etc/$f" >&2; rm -f "$new"
  fi
done
exit 0
"""


def init_container(image: str, users: Sequence[User], security: dict) -> dict:
    """The init container that writes the merged files, of the main container's image (its own
    /etc/passwd is the one extended). The entries' hash in its environment changes the pod
    template when the users change, so the pod is replaced with the new entries."""
    return {
        "name": INIT_CONTAINER,
        "image": image,
        "command": ["sh", "-c", merge_script()],
        "env": [{"name": "SLINKY_EKS_IDENTITIES", "value": entries_hash(users)}],
        "securityContext": dict(security),
        "volumeMounts": [
            {"name": ENTRIES_VOLUME, "mountPath": ENTRIES_DIR, "readOnly": True},
            {"name": MERGED_VOLUME, "mountPath": MERGED_DIR},
        ],
    }


def merged_mounts() -> list[dict]:
    """The main container's mounts of the merged files over its own."""
    return [{"name": MERGED_VOLUME, "mountPath": f"/etc/{f}", "subPath": f, "readOnly": True} for f in FILES]


def entries_volume(configmap: str) -> dict:
    # Read by root (Prolog), the init container's user and sshd: world-readable, as /etc/passwd is.
    return {"name": ENTRIES_VOLUME, "configMap": {"name": configmap, "defaultMode": 0o444}}


def merged_volume() -> dict:
    return {"name": MERGED_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}


def keys_volume(configmap: str) -> dict:
    # Read by AuthorizedKeysCommandUser (nobody).
    return {"name": KEYS_VOLUME, "configMap": {"name": configmap, "defaultMode": 0o444}}


def keys_mount() -> dict:
    return {"name": KEYS_VOLUME, "mountPath": KEYS_DIR, "readOnly": True}


def entries_mount() -> dict:
    """The workers' slurmd mount of the entries as a directory (not subPath: the kubelet updates
    it in place)."""
    return {"name": ENTRIES_VOLUME, "mountPath": ENTRIES_DIR, "readOnly": True}
