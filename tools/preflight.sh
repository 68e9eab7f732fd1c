#!/usr/bin/env bash
# What `make up|preview|destroy` needs before it installs or runs anything, each missing piece
# reported with how to get it, all at once:
#   the Pulumi CLI; the AWS CLI (the stack's kubeconfig runs `aws eks get-token`) and credentials
#   it can use; for `up`, Docker with buildx (the program builds and pushes the slurmd image); a
#   state passphrase, or the explicit opt-in ALLOW_EMPTY_PASSPHRASE=1 for an empty one; and that
#   this machine's public IPv4 address is inside the API endpoint's allowed blocks (read from
#   Pulumi.$STACK.yaml in the working directory), since outside them the EKS change succeeds and
#   every later Kubernetes call times out.
# Exit status: 0 ready; 1 something is missing (one line each on stderr); 2 bad usage.
# Only bash builtins besides the tools it checks (and curl), so a test can run it with a PATH of
# its choosing.
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

# The API endpoint's allowed blocks: apiAllowedCidrs, or the IPv4 blocks of sshAllowedCidrs when it
# is empty (stack/config.py). The project name is Pulumi.yaml's.
stack=${STACK:-dev}
stack_file=Pulumi.$stack.yaml
ipv4='^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$'

# The items of one list-valued key in a stack file: block (`- item`) or flow (`[a, b]`) style.
config_list() {
  local key=$1 line rest item in_list=0
  while IFS= read -r line || [[ -n $line ]]; do
    if [[ $line =~ ^[[:space:]]+slinky-eks:$key:[[:space:]]*(.*)$ ]]; then
      rest=${BASH_REMATCH[1]%%#*}
      in_list=1
      if [[ $rest == \[* ]]; then
        in_list=0
        rest=${rest#[}; rest=${rest%%]*}
        IFS=, read -ra items <<<"$rest"
        for item in "${items[@]}"; do unquote "$item"; done
      fi
    elif (( in_list )) && [[ $line =~ ^[[:space:]]*-[[:space:]]*(.*)$ ]]; then
      unquote "${BASH_REMATCH[1]%%#*}"
    elif (( in_list )) && [[ $line =~ ^[[:space:]]*[^[:space:]#] ]]; then
      in_list=0
    fi
  done <"$stack_file"
}
unquote() {
  local v=$1
  v=${v#"${v%%[![:space:]]*}"}; v=${v%"${v##*[![:space:]]}"}
  v=${v#[\"\']}; v=${v%[\"\']}
  [[ -n $v ]] && echo "$v"
}
ip_number() {
  [[ $1 =~ $ipv4 ]] || return 1
  local a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
  (( 10#$a < 256 && 10#$b < 256 && 10#$c < 256 && 10#$d < 256 )) || return 1
  echo $(( (10#$a << 24) | (10#$b << 16) | (10#$c << 8) | 10#$d ))
}
inside() {  # inside ADDRESS CIDR
  local address net bits=${2#*/} mask
  [[ $2 == */* ]] || bits=32
  [[ $bits =~ ^[0-9]+$ ]] && (( bits <= 32 )) || return 1
  address=$(ip_number "$1") && net=$(ip_number "${2%/*}") || return 1
  mask=$(( bits == 0 ? 0 : (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF ))
  (( (address & mask) == (net & mask) ))
}

warnings=()
if [[ -f $stack_file ]]; then
  mapfile -t api_cidrs < <(config_list apiAllowedCidrs)
  api_key=apiAllowedCidrs
  if (( ${#api_cidrs[@]} == 0 )); then
    while IFS= read -r cidr; do
      [[ $cidr == *:* ]] || api_cidrs+=("$cidr")  # IPv4 only, as the endpoint takes
    done < <(config_list sshAllowedCidrs)
    api_key="sshAllowedCidrs (apiAllowedCidrs is unset)"
  fi
  if (( ${#api_cidrs[@]} > 0 )); then
    if ! command -v curl >/dev/null 2>&1; then
      warnings+=("curl is not on PATH: could not check that this machine's public address is inside $api_key (${api_cidrs[*]}), where the EKS API endpoint answers")
    elif ! public=$(curl -4 -fsS --max-time 5 https://checkip.amazonaws.com 2>/dev/null) \
        || ! public=$(unquote "$public") || ! ip_number "$public" >/dev/null; then
      warnings+=("checkip.amazonaws.com did not answer: could not check that this machine's public address is inside $api_key (${api_cidrs[*]}), where the EKS API endpoint answers")
    else
      allowed=0
      for cidr in "${api_cidrs[@]}"; do inside "$public" "$cidr" && allowed=1; done
      if (( ! allowed )); then
        missing "this machine's public address $public is outside $api_key (${api_cidrs[*]}): the EKS API endpoint would refuse it and every Kubernetes call of \`pulumi $command_name\` would time out; add $public/32 to slinky-eks:apiAllowedCidrs in $stack_file, or run from inside those blocks"
      fi
    fi
  fi
fi

for p in "${problems[@]}"; do
  echo "make $command_name: $p" >&2
done
for w in "${warnings[@]}"; do
  echo "make $command_name: warning: $w" >&2
done
[[ ${#problems[@]} -eq 0 ]]
