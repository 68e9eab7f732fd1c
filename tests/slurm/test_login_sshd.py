"""The login pod's sshd runs keys only, with no forwarding but the Grafana tunnel's
(model/builders/login_sshd.py), as a real sshd reads it: Debian's OpenSSH server in the sid root, given
/etc/ssh laid out as in the login pod (the operator's sshd_config, the program's drop-in in
sshd_config.d), answers `sshd -T` with the configuration it would run."""

from __future__ import annotations

import pathlib
import shlex
import shutil
import subprocess

import pytest

from devkit.offline_run import run_program
from model.builders import login_sshd
from model.facts.contract import LOGINSET
from tests.graph.test_user_identities import ALICE
from tests.support.local_slurm import slurm_root

# Needs the sid root (make test builds it) and root, to chroot into it: the marker keeps it out of
# `make test-fast`, which builds no root.
pytestmark = pytest.mark.slurm

SSH_DIR = "/etc/ssh"


def operator_sshd_config(extra: str) -> str:
    """The login pod's /etc/ssh/sshd_config as the operator writes it (SlinkyProject/slurm-operator
    v1.2.1 internal/builder/loginbuilder/login_config.go buildSshdConfig, lines joined by
    internal/utils/config/config.go Build with a final newline): the Include first, its three
    settings, then the LoginSet's extraSshdConfig as given."""
    lines = [
        "#",
        "### GENERAL ###",
        f"Include {login_sshd.DROP_IN_DIR}/*.conf",
        "UsePAM yes",
        "X11Forwarding yes",
        "Subsystem sftp internal-sftp",
        "#",
        "### EXTRA CONFIG ###",
        extra,
        "",
    ]
    return "\n".join(lines)


def release_sshd_files(overrides: dict) -> tuple[str, str]:
    """(drop-in, extraSshdConfig) as the stack's Slurm release carries them."""
    values = run_program("dev", overrides).named("slurm-release").inputs["values"]
    (configmap,) = [o for o in values["extraObjects"] if o["metadata"]["name"] == login_sshd.CONFIGMAP]
    return configmap["data"][login_sshd.DROP_IN_FILE], values["loginsets"][LOGINSET].get(
        "extraSshdConfig", ""
    )


def effective(tmp_path: pathlib.Path, sshd_config: str, drop_ins: dict[str, str]) -> dict[str, str]:
    """`sshd -T` in the sid root with /etc/ssh replaced, in a mount namespace of its own, by the
    root's host keys and moduli, `sshd_config` and the drop-ins: keyword (lower case) -> value."""
    root = slurm_root("sid")
    etc = tmp_path / "etc-ssh"
    (etc / "sshd_config.d").mkdir(parents=True)
    for item in (root / SSH_DIR.lstrip("/")).iterdir():
        if item.name.startswith("ssh_host_") or item.name == "moduli":
            shutil.copy2(item, etc / item.name)
    (etc / "sshd_config").write_text(sshd_config)
    for name, text in drop_ins.items():
        (etc / "sshd_config.d" / name).write_text(text)
    r = shlex.quote(str(root))
    script = (
        f"set -e; mount --bind {shlex.quote(str(etc))} {r}{SSH_DIR}; "
        # sshd refuses to start without its privilege separation directory.
        f"mount -t tmpfs -o mode=755 tmpfs {r}/run; mkdir -m 755 {r}/run/sshd; "
        f"exec chroot {r} /usr/sbin/sshd -T -f {SSH_DIR}/sshd_config"
    )
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = {}
    for line in done.stdout.splitlines():
        keyword, _, value = line.partition(" ")
        out.setdefault(keyword.lower(), value)
    return out


WANTED = {
    "passwordauthentication": "no",
    "kbdinteractiveauthentication": "no",
    "authenticationmethods": "publickey",
    "allowtcpforwarding": "local",
    "permitopen": "grafana.grafana.svc.cluster.local:80",
    "allowstreamlocalforwarding": "no",
    "allowagentforwarding": "no",
    "x11forwarding": "no",
    "permittunnel": "no",
    "gatewayports": "no",
}


def _login_pod(tmp_path, overrides: dict) -> dict[str, str]:
    drop_in, extra = release_sshd_files(overrides)
    return effective(tmp_path, operator_sshd_config(extra), {login_sshd.DROP_IN_FILE: drop_in})


def test_the_login_sshd_runs_keys_only_with_the_grafana_tunnel_alone(tmp_path):
    config = _login_pod(tmp_path, {})
    assert {k: config.get(k) for k in WANTED} == WANTED
    # Root logs in with its key only (OpenSSH's default, which nothing here changes).
    assert config["permitrootlogin"] == "prohibit-password"


def test_with_named_users_sshd_also_reads_their_keys_and_refuses_root(tmp_path):
    config = _login_pod(tmp_path, {"users": [ALICE], "sshPublicKey": ""})
    assert {k: config.get(k) for k in WANTED} == WANTED
    assert config["authorizedkeyscommand"] == "/usr/bin/cat /etc/ssh/slinky-eks-keys/%u"
    assert config["authorizedkeyscommanduser"] == "nobody"
    assert config["permitrootlogin"] == "no"


def test_the_drop_in_wins_over_a_drop_in_of_the_image(tmp_path):
    drop_in, extra = release_sshd_files({})
    config = effective(
        tmp_path,
        operator_sshd_config(extra),
        {login_sshd.DROP_IN_FILE: drop_in, "50-cloud-init.conf": "PasswordAuthentication yes\n"},
    )
    assert config["passwordauthentication"] == "no"


def test_a_line_in_extra_sshd_config_cannot_undo_the_operators(tmp_path):
    """Why the settings are a drop-in: sshd keeps the first value, and the operator's
    `X11Forwarding yes` comes before extraSshdConfig."""
    config = effective(tmp_path, operator_sshd_config("X11Forwarding no\nAllowTcpForwarding local\n"), {})
    assert (config["x11forwarding"], config["allowtcpforwarding"]) == ("yes", "local")
