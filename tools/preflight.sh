#!/usr/bin/env bash
# What `make up|preview|destroy` needs before it installs or runs anything, each missing piece
# reported with how to get it, all at once:
#   the Pulumi CLI; the AWS CLI (the stack's kubeconfig runs `aws eks get-token`) and credentials
#   it can use; for `up`, Docker with buildx (the program builds and pushes the slurmd image); a
#   state passphrase, or the explicit opt-in ALLOW_EMPTY_PASSPHRASE=1 for an empty one.
# Exit status: 0 ready; 1 something is missing (one line each on stderr); 2 bad usage.
# Only bash builtins besides the tools it checks, so a test can run it with a PATH of its choosing.
set -uo pipefail

command_name=${1:-}
case "$command_name" in
  up | preview | destroy) ;;
  *) echo "usage: preflight.sh up|preview|destroy" >&2; exit 2 ;;
esac

problems=()
missing() { problems+=("$1"); }

if ! command -v pulumi >/dev/null 2>&1; then
  missing "the Pulumi CLI is not on PATH: install it with \`curl -fsSL https://get.pulumi.com | sh\` (https://www.pulumi.com/docs/install/)"
fi

if ! command -v aws >/dev/null 2>&1; then
  missing "the AWS CLI is not on PATH (the kubeconfig runs \`aws eks get-token\`): install v2, https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html"
elif ! identity_error=$(aws sts get-caller-identity --output text --query Arn \
    --cli-connect-timeout 10 --cli-read-timeout 20 2>&1 >/dev/null); then
  # The CLI's own last line names the cause (no credentials, expired token, no network).
  identity_error=${identity_error%$'\n'}
  missing "AWS credentials do not work (${identity_error##*$'\n'}): run \`aws configure\` or \`aws sso login\`, or set AWS_PROFILE (https://docs.aws.amazon.com/cli/latest/userguide/cli-chap-configure.html)"
fi

if [[ $command_name == up ]]; then
  if ! command -v docker >/dev/null 2>&1; then
    missing "Docker is not on PATH (\`up\` builds and pushes the slurmd image): install Docker Engine, https://docs.docker.com/engine/install/"
  elif ! docker buildx version >/dev/null 2>&1; then
    missing "Docker has no buildx plugin: install it, https://github.com/docker/buildx#installing"
  elif ! docker info >/dev/null 2>&1; then
    missing "the Docker daemon is not reachable: start it (\`sudo systemctl start docker\`) or set DOCKER_HOST"
  fi
fi

# The local state backend encrypts the stack's secrets (the kubeconfig) with this passphrase
# (PULUMI_CONFIG_PASSPHRASE, https://www.pulumi.com/docs/iac/cli/environment-variables/).
if [[ -z ${PULUMI_CONFIG_PASSPHRASE:-} && -z ${PULUMI_CONFIG_PASSPHRASE_FILE:-} \
      && ${ALLOW_EMPTY_PASSPHRASE:-} != 1 ]]; then
  missing "no state passphrase: export PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to encrypt the stack's secrets, or run \`make $command_name ALLOW_EMPTY_PASSPHRASE=1\` to use an empty one on purpose"
fi

for p in "${problems[@]}"; do
  echo "make $command_name: $p" >&2
done
[[ ${#problems[@]} -eq 0 ]]
