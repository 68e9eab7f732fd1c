#!/usr/bin/env bash
# Build and push the slurmd image without Pulumi: the same Dockerfile, base images and tag the
# program uses (defaults are the pins of model/facts/versions.py). Needs Docker with buildx, AWS
# credentials and python3.
#   image/build-image.sh --region us-west-2 [--repo slinky-eks-dev/slurmd] [--tag T]
#                        [--dlc-image REF] [--slurmd-image REF] [--slurm-version V]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The default of a version key, from the one place versions are pinned (standard library only).
pin() { PYTHONPATH="$HERE/.." python3 -m model.facts.versions "$1"; }
REGION=""
REPO="slinky-eks-dev/slurmd"
SLURM_VERSION=$(pin slurmVersion)
TAG=$(pin slurmdImageTag)
DLC_IMAGE=$(pin dlcBaseImage)
SLURMD_IMAGE=$(pin slurmdBaseImage)
DLC_ACCOUNT="763104351884"

usage() { sed -n '2,6p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --region) REGION=$2; shift 2 ;;
    --repo) REPO=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --dlc-image) DLC_IMAGE=$2; shift 2 ;;
    --slurmd-image) SLURMD_IMAGE=$2; shift 2 ;;
    --slurm-version) SLURM_VERSION=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$REGION" ] || usage
case $TAG in "$SLURM_VERSION"-*) ;; *) echo "tag $TAG must start with $SLURM_VERSION-" >&2; exit 2 ;; esac

# A DLC reference without a registry host lives in the DLC registry of the region. The host is
# the first path element when it has a '.' or ':' or is localhost (distribution/reference v0.6.0
# normalize.go, splitDockerDomain); a bare repository:tag has none, dots in its tag or not.
head=""
case $DLC_IMAGE in */*) head=${DLC_IMAGE%%/*} ;; esac
case $head in
  *.*|*:*|localhost) dlc_registry=$head ;;
  *) dlc_registry="$DLC_ACCOUNT.dkr.ecr.$REGION.amazonaws.com"; DLC_IMAGE="$dlc_registry/$DLC_IMAGE" ;;
esac
account=$(aws sts get-caller-identity --query Account --output text)
registry="$account.dkr.ecr.$REGION.amazonaws.com"

aws ecr get-login-password --region "$REGION" | docker login --username AWS --password-stdin "$dlc_registry"
aws ecr get-login-password --region "$REGION" | docker login --username AWS --password-stdin "$registry"
aws ecr describe-repositories --region "$REGION" --repository-names "$REPO" >/dev/null 2>&1 \
  || aws ecr create-repository --region "$REGION" --repository-name "$REPO" \
       --image-scanning-configuration scanOnPush=true --image-tag-mutability IMMUTABLE >/dev/null

docker buildx build --platform linux/amd64 \
  --build-arg "DLC_IMAGE=$DLC_IMAGE" --build-arg "SLURMD_IMAGE=$SLURMD_IMAGE" \
  --build-arg "SLURM_VERSION=$SLURM_VERSION" \
  --tag "$registry/$REPO:$TAG" --push "$HERE"
digest=$(aws ecr describe-images --region "$REGION" --repository-name "$REPO" \
           --image-ids "imageTag=$TAG" --query 'imageDetails[0].imageDigest' --output text)
echo "$registry/$REPO@$digest"
