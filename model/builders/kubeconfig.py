"""The kubeconfig of a cluster the stack does not own: its endpoint and CA as DescribeCluster gives
them, and a token from `aws eks get-token` on every use, so nothing in it expires or is secret.
The same shape `aws eks update-kubeconfig` writes (AWS CLI reference, eks update-kubeconfig and eks
get-token: https://awscli.amazonaws.com/v2/documentation/api/latest/reference/eks/get-token.html),
and the exec credential plugin of Kubernetes' client-go (client.authentication.k8s.io/v1beta1,
https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins).
"""

from __future__ import annotations

import json

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def exec_kubeconfig(
    cluster_name: str, region: str, endpoint: str, certificate_authority: str, profile: str | None = None
) -> str:
    """The kubeconfig as a JSON document: one cluster, one user whose token `aws eks get-token`
    prints for the credentials of whoever runs it (the deployer under `pulumi up`). With the
    stack's aws:profile, the token is that profile's, as the stack's AWS calls are: the exec entry
    sets AWS_PROFILE (client-go's ExecConfig env, name and value:
    https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/#ExecEnvVar), as `aws eks
    update-kubeconfig --profile` writes it."""
    command = {
        "apiVersion": EXEC_API_VERSION,
        "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
        "interactiveMode": "Never",
        **({"env": [{"name": "AWS_PROFILE", "value": profile}]} if profile else {}),
    }
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster_name,
                    "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority},
                }
            ],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [
                {
                    "name": cluster_name,
                    "user": {"exec": command},
                }
            ],
        },
        sort_keys=True,
    )
