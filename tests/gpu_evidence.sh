#!/usr/bin/env bash
# GPU evidence, not CI: the project's own jobs under a real Slurm cluster with NCCL on a lent GPU
# machine (two fake nodes, one GPU each, from ../shared/tools/gpu-slurm's bundle).
#   bash tests/gpu_evidence.sh BUNDLE_DIR OUTPUT_DIR
# Jobs are staged as the program stages them (jobs/ + cluster.env rendered from the catalog, for
# the H200 type p5en.48xlarge); off EFA, the EFA defaults are dropped by environment overrides.
set -uo pipefail
bundle=$(cd "${1:?bundle dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
shared=/tmp/shared
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
SLURM_CI_NODES=2 bash "$bundle/gpu-up.sh" || exit 1
# shellcheck source=/dev/null
source /tmp/slurmrun/env.sh
rm -rf "$shared" && mkdir -p "$shared/logs"
python3 - "$shared/jobs" <<'PY'
import pathlib, shutil, sys
sys.path.insert(0, ".")
from components.catalog import CATALOG
from components.job_environment import cluster_environment, render
dst = pathlib.Path(sys.argv[1])
shutil.copytree("jobs", dst)
(dst / "cluster.env").write_text(render(cluster_environment(CATALOG["p5en.48xlarge"])))
PY
export JOBS_DIR=$shared/jobs LOG_DIR=$shared/logs SBATCH_OUTPUT="$shared/logs/%x-%j.out" \
       GPUS_PER_NODE=1 NPROC_PER_NODE=1 PYTHON=python3 HF_HOME=$shared/hf SBATCH_WAIT_TIMEOUT=300
off_efa=(EXPECT_EFA=0 NCCL_NET= FI_EFA_USE_DEVICE_RDMA=)
run() {  # run LABEL SCRIPT [VAR=VALUE...]
  local label=$1 script=$2; shift 2
  env "$@" bash "$bundle/sbatch-wait.sh" "$shared/jobs/$script" > "$out/$label.out" 2>&1
  echo "== $label: exit $?"
  grep -E 'all_reduce|transport|FAILED|SANITY|METRICS|Done\.|adapters written|NCCL WARN|Using network|via (P2P|SHM|NET)' "$out/$label.out" | sort | uniq -c | sort -rn | head -20
}
run sanity-nccl sanity.sbatch "${off_efa[@]}"
run sanity-efa-expected sanity.sbatch
run finetune-tiny finetune.sbatch "${off_efa[@]}" TINY_MODEL=1 MAX_STEPS=8 OUTPUT_DIR=$shared/lora-out
find "$shared/lora-out" -maxdepth 1 -type f -printf "%s %f\n" | tee "$out/lora-out.txt"
cp "$shared"/logs/*.log "$out/" 2>/dev/null
bash "$bundle/gpu-down.sh"
