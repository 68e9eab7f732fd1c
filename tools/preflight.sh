#!/usr/bin/env bash
# What `make up|preview|destroy` needs before it installs or runs anything, each missing piece
# reported with how to get it, all at once:
#   the Pulumi CLI; the AWS CLI (the stack's kubeconfig runs `aws eks get-token`) and credentials
#   it can use; for `up` with imageBuilder: local, Docker with buildx (the program then builds and
#   pushes the slurmd image on this machine; the default, codebuild, builds it in the region); a
#   state passphrase, or the explicit opt-in ALLOW_EMPTY_PASSPHRASE=1 for an empty one; and that
#   this machine's public IPv4 address is inside the API endpoint's allowed blocks, since outside
#   them the EKS change succeeds and every later Kubernetes call times out. Both keys are read from
#   Pulumi.$STACK.yaml in the working directory, where `pulumi config set` writes them.
# Then the state backend: a stack whose state is still in the one-person local backend while
# another backend is chosen is refused (it would start empty there); with nothing missing and no
# backend chosen at all, it logs this machine in to the local backend and says so (the one thing
# it changes).
# Exit status: 0 ready; 1 something is missing (one line each on stderr); 2 bad usage.
# Only bash builtins besides the tools it checks (and curl, and mkdir for the local backend), so a
# test can run it with a PATH of its choosing.
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

# The stack's value of one scalar key (slinky-eks:KEY: value) in its stack file, unquoted; nothing
# when the file or the key is absent.
stack=${STACK:-dev}
stack_file=Pulumi.$stack.yaml
config_value() {
  local key=$1 line
  [[ -f $stack_file ]] || return 0
  while IFS= read -r line || [[ -n $line ]]; do
    if [[ $line =~ ^[[:space:]]+slinky-eks:$key:[[:space:]]*(.*)$ ]]; then
      unquote "${BASH_REMATCH[1]%%#*}"
      return 0
    fi
  done <"$stack_file"
}
unquote() {
  local v=$1
  v=${v#"${v%%[![:space:]]*}"}; v=${v%"${v##*[![:space:]]}"}
  v=${v#[\"\']}; v=${v%[\"\']}
  [[ -n $v ]] && echo "$v"
}

# imageBuilder's default is codebuild (model/checks/config_schema.py): Docker only for local.
image_builder=$(config_value imageBuilder)
if [[ $command_name == up && ${image_builder:-codebuild} == local ]]; then
  if ! command -v docker >/dev/null 2>&1; then
    missing "Docker is not on PATH (with imageBuilder: local \`up\` builds and pushes the slurmd image here): install Docker Engine, https://docs.docker.com/engine/install/"
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
notes=()
# With existingClusterName the program leaves the cluster's endpoint as its owner set it and ignores
# apiAllowedCidrs (components/existing_cluster.py): its blocks are the cluster's, which only AWS can
# say; tools/api_reach.py reads them with eks:DescribeCluster.
existing_cluster=$(config_value existingClusterName)
if [[ -n $existing_cluster ]]; then
  notes+=("the address check is left to \`.venv/bin/python -m tools.api_reach $stack_file\`: with existingClusterName ($existing_cluster) the API endpoint answers the blocks its owner set, not apiAllowedCidrs")
elif [[ -f $stack_file ]]; then
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

# Where the state lives. The Pulumi CLI takes PULUMI_BACKEND_URL first, then the project's
# backend.url (Pulumi.yaml), then the backend of the last `pulumi login`, "current" in
# $PULUMI_CREDENTIALS_PATH or $PULUMI_HOME (default ~/.pulumi)/credentials.json (pulumi/pulumi
# v3.259.0, pkg/workspace/creds.go GetCurrentCloudURLWithSource; sdk/go/common/workspace/creds.go
# getCredsFilePath); with none of them it logs in to Pulumi Cloud, with PULUMI_ACCESS_TOKEN if set,
# else interactively. A team sets its shared backend as backend.url in Pulumi.yaml, which every
# `pulumi` command, `pulumi login` and CI read (docs/ci.md, "State a team shares"). With nothing
# set, the one-person default: state in this machine's ~/.pulumi-slinky-eks, logged in to so
# that a later `pulumi stack output` finds it too, and said so. A file:// backend, this one or
# another, is named on every run: its state is on this machine only
# (docs/decisions/shared-state-backend.md).
local_backend_url=file://~/.pulumi-slinky-eks
credentials=${PULUMI_CREDENTIALS_PATH:-${PULUMI_HOME:-$HOME/.pulumi}}/credentials.json
current_re='"current"[[:space:]]*:[[:space:]]*"([^"]+)"'
project_backend_re=$'(^|\n)backend:[[:space:]]*\n([[:space:]]+#[^\n]*\n)*[[:space:]]+url:[[:space:]]*([^[:space:]#]+)'
backend_url=
if [[ -n ${PULUMI_BACKEND_URL:-} ]]; then
  backend_url=$PULUMI_BACKEND_URL
elif [[ -f Pulumi.yaml ]] && [[ $(<Pulumi.yaml) =~ $project_backend_re ]]; then
  backend_url=${BASH_REMATCH[3]}
elif [[ -f $credentials ]] && [[ $(<"$credentials") =~ $current_re ]]; then
  backend_url=${BASH_REMATCH[1]}
elif [[ -n ${PULUMI_ACCESS_TOKEN:-} ]]; then
  backend_url=https://api.pulumi.com
fi
# A stack whose state is still in the one-person backend (where Pulumi.yaml's backend.url put it
# before it named none) while another backend is chosen: `make` would select --create an empty
# stack of that name there and `up` would create everything again beside the running cluster.
# The file backend keeps a stack at .pulumi/stacks/<project>/<stack>.json, gzipped with
# PULUMI_DIY_BACKEND_GZIP (pulumi/pulumi v3.259.0, pkg/backend/diy/store.go and backend.go).
project=slinky-eks
if [[ -f Pulumi.yaml ]] && [[ $(<Pulumi.yaml) =~ (^|$'\n')name:[[:space:]]*([^[:space:]#]+) ]]; then
  project=${BASH_REMATCH[2]}
fi
local_state=
for f in "$HOME/.pulumi-slinky-eks/.pulumi/stacks/$project/$stack".json{,.gz}; do
  [[ -f $f ]] && local_state=$f
done
case "${backend_url%/}" in
  "" | "$local_backend_url" | "file://$HOME/.pulumi-slinky-eks") ;;
  *)
    if [[ -n $local_state ]]; then
      missing "the state backend is $backend_url, but stack $stack's state is in $local_backend_url ($local_state): \`pulumi $command_name\` there would start an empty stack and create everything again; keep it with \`pulumi login $local_backend_url\`, or move it (\`PULUMI_BACKEND_URL=$local_backend_url pulumi stack export --stack $stack --file $stack.state.json\`, then \`pulumi stack init $stack && pulumi stack import --stack $stack --file $stack.state.json\` on $backend_url) and remove $local_state"
    fi
    ;;
esac
local_only="state on this machine only; a team shares one backend instead, docs/ci.md#state-a-team-shares"
if [[ $backend_url == file://* ]]; then
  notes+=("the state backend is $backend_url, $local_only")
elif [[ -z $backend_url ]] && (( ${#problems[@]} == 0 )); then
  if mkdir -p "$HOME/.pulumi-slinky-eks" \
      && login_error=$(pulumi login --non-interactive "$local_backend_url" 2>&1 >/dev/null); then
    notes+=("no Pulumi backend chosen (no \`pulumi login\`, PULUMI_BACKEND_URL or PULUMI_ACCESS_TOKEN): logged in to $local_backend_url, $local_only")
  else
    login_error=${login_error:-could not create $HOME/.pulumi-slinky-eks}
    missing "no Pulumi backend chosen and \`pulumi login $local_backend_url\` failed (${login_error##*$'\n'}): run \`pulumi login\` with the backend to use (docs/ci.md#state-a-team-shares)"
  fi
fi

for p in "${problems[@]}"; do
  echo "make $command_name: $p" >&2
done
for w in "${warnings[@]}"; do
  echo "make $command_name: warning: $w" >&2
done
for n in "${notes[@]}"; do
  echo "make $command_name: note: $n" >&2
done
[[ ${#problems[@]} -eq 0 ]]
