#!/bin/sh
# ecr-password.sh REGION ENDPOINT AGENT TOKEN_FILE: prints the password of the account's ECR
# registry in REGION, for enroot's .credentials line (model/builders/containers.py writes it; enroot
# substitutes a password that starts with `$` at each import: NVIDIA/enroot v4.1.2 src/common.sh
# common::evalnetrc).
#
# Signed with the pod's own EKS Pod Identity credentials, never the node's: the node's agent
# (AGENT, its credentials URI) answers GET, with the pod's projected token (TOKEN_FILE) as the
# Authorization header, with AccessKeyId, SecretAccessKey and Token (aws/eks-pod-identity-agent
# v0.1.37 pkg/handlers/eks_credential_handler.go, pkg/credentials/model.go). Both come as arguments,
# not from AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: the Pod
# Identity webhook puts those in the slurmd container's environment, but pyxis starts enroot with
# the job's environment, not slurmstepd's (NVIDIA/pyxis v0.24.0 pyxis_slurmstepd.c slurm_clear_env,
# enroot_import_job_env).
# No AWS CLI in the image: curl signs the call itself (--aws-sigv4, curl 7.75 and later), ECR's
# JSON 1.1 API (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_GetAuthorizationToken.html):
# authorizationToken is base64 of "AWS:<password>".
#
# The secrets go to curl through its standard input (-K -), never its arguments, which every user
# of the pod could read in /proc. The job's user runs this with the job's environment and home: -q
# (first) keeps curl from reading their ~/.curlrc, and the agent, plain HTTP on the node, is called
# with no proxy, so a proxy the job names never sees the pod's token (curl(1), -q, --noproxy). Any failure: one line on stderr, exit 1. enroot discards the
# helper's stderr (NVIDIA/enroot v4.1.2 src/docker.sh: common::evalnetrc ... 2> /dev/null), meets
# the registry with no password and fails the import with its own `401 Unauthorized`: the line is
# seen when the helper is run by hand (docs/operations.md, "Container jobs").
set -eu

fail() {
    printf 'ecr-password: %s\n' "$*" >&2
    exit 1
}

# One line of text, for a message: curl's error and the service's answer joined.
one_line() {
    printf '%s' "$1" | tr '\n' ' '
}

[ "$#" -eq 4 ] || fail "usage: ecr-password.sh REGION ENDPOINT AGENT TOKEN_FILE"
region=$1
endpoint=$2
agent=$3
token_file=$4

[ -r "$token_file" ] \
    || fail "cannot read the Pod Identity token file '$token_file': does this pod's service account have an EKS Pod Identity association?"
token=$(cat "$token_file")

if ! credentials=$(printf 'header = "Authorization: %s"\n' "$token" \
    | curl -q -sS --noproxy '*' --fail-with-body --max-time 10 -K - -- "$agent" 2>&1); then
    fail "the credentials endpoint refused: $(one_line "$credentials")"
fi
if ! { key=$(printf '%s' "$credentials" | jq -er .AccessKeyId) \
    && secret=$(printf '%s' "$credentials" | jq -er .SecretAccessKey) \
    && session=$(printf '%s' "$credentials" | jq -er .Token); }; then
    fail "the credentials endpoint answered no AccessKeyId, SecretAccessKey and Token"
fi

if ! answer=$(printf 'user = "%s:%s"\nheader = "x-amz-security-token: %s"\n' "$key" "$secret" "$session" \
    | curl -q -sS --fail-with-body --max-time 30 -K - \
        --aws-sigv4 "aws:amz:${region}:ecr" \
        -H "Content-Type: application/x-amz-json-1.1" \
        -H "X-Amz-Target: AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken" \
        --data '{}' -- "${endpoint}/" 2>&1); then
    fail "ECR refused GetAuthorizationToken in ${region}: $(one_line "$answer")"
fi
login=$(printf '%s' "$answer" | jq -er '.authorizationData[0].authorizationToken' | base64 -d) \
    || fail "ECR's answer held no authorizationToken"
case "$login" in
    AWS:?*) printf '%s\n' "${login#AWS:}" ;;
    *) fail "ECR's authorizationToken is not AWS:<password>" ;;
esac
