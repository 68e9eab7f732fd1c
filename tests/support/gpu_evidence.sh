#!/usr/bin/env bash
# GPU evidence, not CI: the project's own jobs under a real Slurm cluster on a lent GPU machine
# (Slurm 22.05 from ../shared/tools/gpu-slurm's bundle, two fake nodes), with the jobs and a
# cluster.env staged as the program stages them for p5en.48xlarge (H200).
#   bash tests/support/gpu_evidence.sh BUNDLE_DIR OUTPUT_DIR
# BUNDLE_DIR: the gpu-slurm bundle, plus ompi/ (Debian 12's OpenMPI 4.1.4 and PMIx debs, the
# "system OpenMPI" nccl-tests links) and src/nccl-tests-v2.17.9.tar.gz (NVIDIA/nccl-tests v2.17.9,
# `git archive`), since the machine has no network.
# With one GPU both fake nodes use GPU 0: NCCL sees two hosts (different hostnames) and talks over
# sockets, the stand-in for "no EFA". What the image does is emulated where the job depends on it:
# torch's NCCL directory registered with the dynamic linker (image/register-libraries.sh).
set -uo pipefail
bundle=$(cd "${1:?bundle dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
shared=/tmp/shared
lib=/usr/lib/x86_64-linux-gnu
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

step "machine"
nvidia-smi -L
nvcc --version | tail -n2
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
export CUDA_HOME
echo "CUDA_HOME=$CUDA_HOME"
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'

step "OpenMPI 4.1.4 + PMIx from Debian 12, linked in only where the machine has nothing"
ompi=/opt/ompi-root
mkdir -p "$ompi/extralib"
for d in "$bundle"/ompi/*.deb; do dpkg -x "$d" "$ompi"; done
[ -e "$lib/openmpi" ] || ln -s "$ompi/$lib/openmpi" "$lib/openmpi"
[ -e /usr/share/openmpi ] || ln -s "$ompi/usr/share/openmpi" /usr/share/openmpi
[ -e /etc/openmpi ] || ln -s "$ompi/etc/openmpi" /etc/openmpi
have=$(ldconfig -p | awk '/x86-64/ {print $1}')
for f in "$ompi/$lib"/*.so.*; do
  so=$(basename "$f")
  [[ $so == libmpi.so.40 || $so == libopen-rte.so.40 || $so == libopen-pal.so.40 ]] \
    && { [ -e "$lib/$so" ] || ln -s "$f" "$lib/$so"; continue; }   # the system OpenMPI's own path
  grep -qxF "$so" <<< "$have" || cp -P "$f" "$ompi/extralib/"
done
echo "$ompi/extralib" > /etc/ld.so.conf.d/zz-ompi-root.conf
# As the image does: torch's NCCL is the one the loader finds (image/register-libraries.sh).
torch_nccl=$(python3 -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib"))')
echo "$torch_nccl" > /etc/ld.so.conf.d/00-torch-nccl.conf
ldconfig
find "$torch_nccl" "$(dirname "$torch_nccl")/include" -maxdepth 1 2>&1 | head

step "fine-tune libraries from wheels (the versions CI runs)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$bundle"/../.whl/*.whl \
  && export PYTHONPATH=/tmp/site

step "Slurm: 2 fake nodes, one GPU each (both GPU 0)"
fakedev=/tmp/fakedev
mkdir -p "$fakedev"
for i in 0 1; do [ -e "$fakedev/nvidia$i" ] || mknod "$fakedev/nvidia$i" c 195 0; done
SLURM_CI_NODES=2 SLURM_CI_GPUS_PER_NODE=1 SLURM_CI_GPU_DEV_DIR=$fakedev bash "$bundle/gpu-up.sh" || exit 1
echo 0 > /tmp/slurmrun/etc/gpumap-n2   # the task prolog maps n2's GPU to host GPU 0
# shellcheck source=/dev/null
source /tmp/slurmrun/env.sh
srun --mpi=list 2>&1 | tee "$out/mpi-list.txt"

step "jobs and cluster.env staged as the program stages them"
rm -rf "$shared" && mkdir -p "$shared/logs"
python3 - "$shared/jobs" <<'PY'
import pathlib, shutil, sys
sys.path.insert(0, ".")
from model.facts.catalog import CATALOG
from model.builders.job_environment import cluster_environment, render
dst = pathlib.Path(sys.argv[1])
shutil.copytree("jobs", dst)
(dst / "cluster.env").write_text(render(cluster_environment(CATALOG["p5en.48xlarge"])))
PY
cp "$shared/jobs/cluster.env" "$out/cluster.env"
export JOBS_DIR=$shared/jobs LOG_DIR=$shared/logs SBATCH_OUTPUT="$shared/logs/%x-%j.out" \
       GPUS_PER_NODE=1 NPROC_PER_NODE=1 PYTHON=python3 HF_HOME=$shared/hf SBATCH_WAIT_TIMEOUT=420 \
       NCCL_TESTS_DIR=$shared/nccl-tests
off_efa=(EXPECT_EFA=0 NCCL_NET= FI_EFA_USE_DEVICE_RDMA=)
run() {  # run LABEL SCRIPT [VAR=VALUE...]
  local label=$1 script=$2; shift 2
  step "$label"
  env "$@" bash "$bundle/sbatch-wait.sh" "$shared/jobs/$script" > "$out/$label.out" 2>&1
  echo "$label exit $?" | tee -a "$out/summary.txt"
  grep -E '^== job|BUILD OK|libnccl|libmpi|Avg bus|wrong|VERDICT|FAIL|PASS|all_reduce|SANITY|METRICS|Done\.|NCCL WARN|Using network|via NET|NET/' \
    "$out/$label.out" | sort | uniq -c | sort -rn | head -25
}
run nccl-tests-build nccl-tests-build.sbatch NCCL_TESTS_SOURCE="$bundle/src/nccl-tests-v2.17.9.tar.gz" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
run nccl-allreduce-efa-expected nccl-allreduce.sbatch NCCL_TESTS_MAX_BYTES=64M NCCL_DEBUG=INFO
run nccl-allreduce nccl-allreduce.sbatch "${off_efa[@]}" NCCL_TESTS_MAX_BYTES=512M NCCL_DEBUG=INFO
run nccl-allgather nccl-allgather.sbatch "${off_efa[@]}" NCCL_TESTS_MAX_BYTES=512M NCCL_DEBUG=INFO
run sanity sanity.sbatch "${off_efa[@]}"
run finetune-tiny finetune.sbatch "${off_efa[@]}" TINY_MODEL=1 MAX_STEPS=8 OUTPUT_DIR=$shared/lora-out
find "$shared/lora-out" -maxdepth 1 -type f -printf "%s %f\n" | tee "$out/lora-out.txt"
sacct >/dev/null 2>&1 || true
scontrol show job -o 2>/dev/null | grep -oE 'JobId=[0-9]+ JobName=\S+|JobState=\S+|ExitCode=\S+' | paste - - - > "$out/jobs.txt"
tar -czf "$out/logs.tgz" -C "$shared" logs
bash "$bundle/gpu-down.sh"
step "done"
