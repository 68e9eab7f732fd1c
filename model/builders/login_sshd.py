"""The login pod's sshd: keys only, and no forwarding but the Grafana tunnel's.

Where the settings go decides whether they hold. The operator writes the login pod's whole
/etc/ssh/sshd_config: `Include /etc/ssh/sshd_config.d/*.conf`, then `UsePAM yes`,
`X11Forwarding yes` and `Subsystem sftp internal-sftp`, then the LoginSet's extraSshdConfig last
(SlinkyProject/slurm-operator v1.2.1 internal/builder/loginbuilder/login_config.go
buildSshdConfig; mounted over /etc/ssh/sshd_config by login_app.go). sshd keeps the first value it
reads for each keyword (sshd_config(5): "the first obtained value will be used"), so a line in
extraSshdConfig cannot undo `X11Forwarding yes`, and OpenSSH's own defaults allow passwords,
keyboard-interactive logins and every kind of forwarding. The settings are therefore a drop-in,
read through the operator's Include before any line of its own: a ConfigMap the Slurm release
renders (chart 1.2.1 `extraObjects`, templates/extra.yaml), mounted as one file into the login
container's /etc/ssh/sshd_config.d. Its name sorts first there, so it also wins over any drop-in
the image ships (Include reads a glob's files in lexical order: sshd_config(5), Include).

tests/slurm/test_login_sshd.py builds the operator's file around it and asks a real sshd (`sshd
-T`) what it would run with.

Pure functions; model/builders/slurm_values.py puts the ConfigMap, the volume and the mount into the
release's values.
"""

from __future__ import annotations

import hashlib

from model.builders import dashboards
from model.facts.contract import SLURM_NAMESPACE

# The drop-in's directory (the operator's Include) and its file name there: "00-" sorts it first.
DROP_IN_DIR = "/etc/ssh/sshd_config.d"
DROP_IN_FILE = "00-slinky-eks.conf"
CONFIGMAP = "slinky-eks-login-sshd"
VOLUME = "slinky-eks-login-sshd"
# The login container's variable naming the drop-in's hash: a changed drop-in changes the pod
# template, so the LoginSet replaces the pod and sshd reads the new file (a file mounted by
# subPath is never updated in a running container: https://kubernetes.io/docs/concepts/storage/
# volumes/#configmap).
HASH_ENV = "SLINKY_EKS_SSHD_CONFIG"


def grafana_tunnel_target() -> str:
    """The one host:port local forwarding may reach: Grafana's Service, by the name the tunnel
    command asks for (model/builders/dashboards.py tunnel_command). sshd compares the name the client sends,
    as text, with PermitOpen's (sshd_config(5), PermitOpen)."""
    return f"{dashboards.service_host()}:{dashboards.SERVICE_PORT}"


def settings() -> list[tuple[str, str]]:
    """The drop-in's keywords and values, in order (sshd_config(5), openssh-portable V_9_6_P1, the
    login image's Ubuntu 24.04 OpenSSH)."""
    return [
        # Keys only: no password (the named users have none: model/builders/identities.py), no
        # keyboard-interactive (which would reach PAM, UsePAM yes), and nothing but a public key.
        ("PasswordAuthentication", "no"),
        ("KbdInteractiveAuthentication", "no"),
        ("AuthenticationMethods", "publickey"),
        # Forwarding: local TCP forwards only, and only to Grafana (the tunnel: docs/grafana.md).
        # Without PermitOpen a forward reaches anything the pod reaches, the EFS mount targets
        # and the cluster's Services included. It bounds sshd's forwards only: a user's shell can
        # still relay (docs/security.md, "The login pod's sshd"), so each endpoint keeps its own guard.
        ("AllowTcpForwarding", "local"),
        ("PermitOpen", grafana_tunnel_target()),
        ("AllowStreamLocalForwarding", "no"),
        ("AllowAgentForwarding", "no"),
        ("X11Forwarding", "no"),
        ("PermitTunnel", "no"),
        ("GatewayPorts", "no"),
    ]


def drop_in() -> str:
    """The drop-in's text: one `Keyword value` line each, newline-terminated."""
    return "".join(f"{keyword} {value}\n" for keyword, value in settings())


def drop_in_hash() -> str:
    """12 hex digits of the drop-in: what rolls the login pod when it changes."""
    return hashlib.sha256(drop_in().encode()).hexdigest()[:12]


def configmap() -> dict:
    """The ConfigMap holding the drop-in, as a Kubernetes object for the chart's extraObjects."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": SLURM_NAMESPACE},
        "data": {DROP_IN_FILE: drop_in()},
    }


def volume() -> dict:
    # Read by sshd, as root: root's file, readable by all, as /etc/ssh/sshd_config.d's files are.
    return {"name": VOLUME, "configMap": {"name": CONFIGMAP, "defaultMode": 0o444}}


def mount() -> dict:
    """The drop-in as one file in the image's own directory (subPath), beside whatever is there."""
    return {
        "name": VOLUME,
        "mountPath": f"{DROP_IN_DIR}/{DROP_IN_FILE}",
        "subPath": DROP_IN_FILE,
        "readOnly": True,
    }


def hash_env() -> dict:
    return {"name": HASH_ENV, "value": drop_in_hash()}
