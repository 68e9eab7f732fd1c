"""The kubeconfig of an existing cluster: its endpoint and CA, and a token from `aws eks get-token`
at every use, so it holds no credential."""

import json

from model.builders.kubeconfig import EXEC_API_VERSION, exec_kubeconfig

DOCUMENT = json.loads(
    exec_kubeconfig("platform", "eu-west-1", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "Q0E=")
)


def test_it_names_the_clusters_endpoint_and_ca():
    (cluster,) = DOCUMENT["clusters"]
    assert cluster["cluster"] == {
        "server": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }


def test_its_user_execs_aws_eks_get_token_for_the_cluster_in_its_region():
    (user,) = DOCUMENT["users"]
    assert user["user"] == {
        "exec": {
            "apiVersion": EXEC_API_VERSION,
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", "platform", "--region", "eu-west-1"],
            "interactiveMode": "Never",
        }
    }


def test_its_current_context_joins_the_cluster_and_the_user():
    assert DOCUMENT["current-context"] == "platform"
    assert DOCUMENT["contexts"] == [
        {"name": "platform", "context": {"cluster": "platform", "user": "platform"}}
    ]


def test_with_the_stacks_aws_profile_the_token_is_that_profiles():
    document = json.loads(
        exec_kubeconfig("platform", "eu-west-1", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "Q0E=", "ops")
    )
    (user,) = document["users"]
    assert user["user"]["exec"]["env"] == [{"name": "AWS_PROFILE", "value": "ops"}]
