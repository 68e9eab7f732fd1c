"""The in-cluster Grafana as data: where it runs, the values its chart gets (the Amazon Managed
Service for Prometheus data source, the dashboards provisioned read-only from one ConfigMap per
file of observability/dashboards), and how a user reaches it: an SSH tunnel through the login
node, so no new endpoint is opened (the login NLB admits only sshAllowedCidrs).

Grafana 13 reads the workspace through the Amazon Managed Service for Prometheus plugin, not the
core Prometheus data source: "In Grafana 13, the core Prometheus data source no longer supports
SigV4 (AWS) or Azure AD authentication" (grafana/grafana docs/sources/datasources/prometheus/
_index.md at v13.2.1, commit 56cd3e9288d8255fecebe5d05b48d191f50674b5). The plugin signs each
request with SigV4 (grafana/grafana-amazonprometheus-datasource v3.2.0 pkg/datasource.go:
awsauth.NewSigV4Middleware, service "aps"); with sigV4AuthType `default` it loads the AWS SDK for
Go v2's default configuration and nothing else (grafana/grafana-aws-sdk v1.5.1 pkg/awsauth/auth.go
GetConfig: AuthTypeDefault adds no credential option before LoadDefaultConfig), whose default chain
includes the container credential provider EKS Pod Identity feeds ("Use pod identity with the AWS
SDK", https://docs.aws.amazon.com/eks/latest/userguide/pod-id-minimum-sdk.html: Go v2 from
release-2023-11-14; the plugin's go.mod has aws-sdk-go-v2/config v1.32.30). Grafana starts a
backend plugin with its own environment, so the plugin sees the AWS_CONTAINER_* variables the Pod
Identity webhook sets (grafana/grafana pkg/plugins envvars: host variables are withheld only under
the pluginsSkipHostEnvVars feature toggle, off by default). `default` is among the auth types
Grafana allows unless told otherwise (grafana-aws-sdk v1.5.1 pkg/awsds/authSettings.go
defaultAuthSettings: default, keys, credentials).
"""

from __future__ import annotations

import pathlib
import re

from model.builders.metrics import DASHBOARDS_DIR, DATASOURCE_UID
from model.facts import versions
from model.facts.contract import CORE_LABELS

NAMESPACE = "grafana"
# The release name is the chart's name, so every object is named `grafana` (chart 12.11.1
# templates/_helpers.tpl grafana.fullname: the release name when it contains the chart's name).
RELEASE = "grafana"
SERVICE_ACCOUNT = "grafana"
# The chart's Service: ClusterIP, port 80 to the container's 3000 (values.yaml service).
SERVICE_PORT = 80
# The port on the user's machine the tunnel listens on (Grafana's own default port).
LOCAL_PORT = 3000

# The admin login, from a Secret the program writes: given none, the chart draws a random password
# on every render (templates/secret.yaml, randAlphaNum 40), which changes the release's manifest on
# every `up` and loses the password that was set on the first start.
# Grafana reads the password from a file of that Secret, mounted read-only, not from an environment
# variable (any grafana.ini option X of section S can be given as GF_S_X__FILE, the path of a file
# holding it: grafana/grafana docs/sources/setup-grafana/configure-docker.md). With that variable
# set the chart renders no Secret and no secretKeyRef of its own (templates/secret.yaml,
# templates/_pod.tpl). Grafana sets the admin password when it creates its database, on every start
# here (no persistence), so the Secret is always the password.
ADMIN_SECRET = "grafana-admin"
ADMIN_USER = "admin"
ADMIN_PASSWORD_KEY = "admin-password"
ADMIN_MOUNT = "/etc/grafana-admin"
ADMIN_PASSWORD_LENGTH = 32

DATASOURCE_TYPE = versions.AMAZON_PROMETHEUS_PLUGIN
DATASOURCE_NAME = "Amazon Managed Service for Prometheus"
DASHBOARD_FOLDER = "Slinky EKS"
# Where the chart mounts dashboardsConfigMaps.<provider> (templates/_pod.tpl).
DASHBOARDS_MOUNT = "/var/lib/grafana/dashboards"
# How often Grafana rereads a provider's directory (its file provider's default is 10 s); the
# kubelet refreshes a ConfigMap volume within about a minute, so a changed file shows by then.
UPDATE_INTERVAL_SECONDS = 30
# A ConfigMap holds at most 1 MiB (Kubernetes docs, "ConfigMaps": "The data stored in a ConfigMap
# cannot exceed 1 MiB").
CONFIGMAP_LIMIT_BYTES = 1024 * 1024

# A ConfigMap name and a Grafana provider name both come from the file's stem: a DNS label.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def dashboard_files(directory: pathlib.Path = DASHBOARDS_DIR) -> list[pathlib.Path]:
    """Every dashboard of the repository, in name order."""
    return sorted(directory.glob("*.json"))


def dashboard_key(path: pathlib.Path) -> str:
    """The provider name of one dashboard file (its stem), refused unless it is a DNS label."""
    if not _DNS_LABEL.match(path.stem) or len(path.stem) > 40:
        raise ValueError(
            f"{path.name}: a dashboard file's name must be a DNS label of at most 40 characters "
            "(lower-case letters, digits, '-'): it names its ConfigMap and its Grafana provider"
        )
    return path.stem


def dashboard_text(path: pathlib.Path) -> str:
    """The file's text, refused when its ConfigMap could not hold it (the API server would reject
    the ConfigMap at `up`; this says so at preview)."""
    text = path.read_text()
    if len(text.encode()) > CONFIGMAP_LIMIT_BYTES:
        raise ValueError(f"{path.name}: {len(text.encode())} bytes, more than a ConfigMap holds (1 MiB)")
    return text


def configmap_name(key: str) -> str:
    return f"{RELEASE}-dashboard-{key}"


def service_host() -> str:
    """The Grafana Service's cluster DNS name, as the login pod resolves it."""
    return f"{RELEASE}.{NAMESPACE}.svc.cluster.local"


def url() -> str:
    return f"http://localhost:{LOCAL_PORT}"


def tunnel_command(login: str) -> str:
    """The ssh command line that forwards LOCAL_PORT to Grafana through the login pod's sshd
    (`login` is <user>@<login hostname>, as sshCommand logs in). -N: no remote command, the
    tunnel only."""
    return f"ssh -N -L {LOCAL_PORT}:{service_host()}:{SERVICE_PORT} {login}"


def datasource(query_endpoint: str, region: str) -> dict:
    """The one data source, provisioned (so read-only in the UI): the workspace's query endpoint
    (aws.amp.Workspace prometheus_endpoint, https://aps-workspaces.<region>.amazonaws.com/
    workspaces/<id>/, the form the plugin's docs give), signed with SigV4 by the pod's own
    credentials. jsonData keys: grafana/grafana-plugin-sdk-go v0.294.0 backend/http_settings.go.
    manageAlerts off: the alert rules are code in the workspace (observability/alerts), and the
    role may only query, not list rules or alerts, so Grafana's alerting pages would only show
    the workspace refusing them."""
    return {
        "name": DATASOURCE_NAME,
        "type": DATASOURCE_TYPE,
        "uid": DATASOURCE_UID,
        "access": "proxy",
        "url": query_endpoint,
        "isDefault": True,
        "editable": False,
        "jsonData": {
            "sigV4Auth": True,
            "sigV4AuthType": "default",
            "sigV4Region": region,
            "httpMethod": "POST",
            "manageAlerts": False,
        },
    }


def providers(keys: list[str]) -> list[dict]:
    """One file provider per dashboard ConfigMap, each reading the directory the chart mounts
    it at; none lets the UI save or delete what the repository provisions."""
    return [
        {
            "name": key,
            "orgId": 1,
            "folder": DASHBOARD_FOLDER,
            "type": "file",
            "disableDeletion": True,
            "editable": False,
            "allowUiUpdates": False,
            "updateIntervalSeconds": UPDATE_INTERVAL_SECONDS,
            "options": {"path": f"{DASHBOARDS_MOUNT}/{key}"},
        }
        for key in keys
    ]


def release_values(query_endpoint: str, region: str, keys: list[str]) -> dict:
    """The values computed here, over the reviewed base (charts-values/grafana.yaml)."""
    return {
        "image": {"tag": versions.GRAFANA_IMAGE_TAG},
        "nodeSelector": dict(CORE_LABELS),
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "env": {
            "GF_SECURITY_ADMIN_USER": ADMIN_USER,
            "GF_SECURITY_ADMIN_PASSWORD__FILE": f"{ADMIN_MOUNT}/{ADMIN_PASSWORD_KEY}",
        },
        # Readable by the pod's group (fsGroup 472, the chart's), not by others.
        "extraSecretMounts": [
            {
                "name": "admin",
                "secretName": ADMIN_SECRET,
                "mountPath": ADMIN_MOUNT,
                "readOnly": True,
                "defaultMode": 0o440,
            }
        ],
        # The chart passes the list to Grafana as GF_PLUGINS_PREINSTALL_SYNC (templates/_pod.tpl):
        # installed before the server starts, at the version given (`id@version`).
        "plugins": [f"{versions.AMAZON_PROMETHEUS_PLUGIN}@{versions.AMAZON_PROMETHEUS_PLUGIN_VERSION}"],
        "datasources": {
            "datasources.yaml": {"apiVersion": 1, "datasources": [datasource(query_endpoint, region)]}
        },
        "dashboardProviders": {"dashboardproviders.yaml": {"apiVersion": 1, "providers": providers(keys)}},
        "dashboardsConfigMaps": {key: configmap_name(key) for key in keys},
    }


# sshd_config lines that would refuse the tunnel: forwarding off for -L (AllowTcpForwarding no or
# remote, DisableForwarding yes; sshd_config(5), openssh-portable V_9_6_P1, Ubuntu 24.04's).
_REFUSING = {"allowtcpforwarding": {"no", "remote"}, "disableforwarding": {"yes"}}


def tunnel_refused_by(sshd_config: str) -> list[str]:
    """The lines of an sshd_config text that turn off local (-L) TCP forwarding. The login pod's
    sshd_config is the operator's (SlinkyProject/slurm-operator v1.2.1 internal/builder/
    loginbuilder/login_config.go buildSshdConfig: no forwarding keyword, then the LoginSet's
    extraSshdConfig), and OpenSSH allows forwarding by default (servconf.c: allow_tcp_forwarding
    defaults to FORWARD_ALLOW), so only a line the program adds could refuse it."""
    out = []
    for line in sshd_config.splitlines():
        words = line.split()
        if len(words) >= 2 and words[1].lower() in _REFUSING.get(words[0].lower(), set()):
            out.append(line.strip())
    return out
