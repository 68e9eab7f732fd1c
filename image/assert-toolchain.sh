#!/usr/bin/env bash
# Build-time assertion of the nccl-tests path: the image's nvcc compiles and links a small CUDA
# program against the NCCL torch loads, the program's libnccl.so.2 resolves (through the loader
# cache, as nccl-tests' binaries do in a job) to that same file, and it runs far enough to read
# NCCL's version (no GPU needed for that).
#   assert-toolchain.sh [--root DIR]     (DIR: a root filesystem, as for assert-image.sh)
set -uo pipefail
ROOT=/
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2; shift 2 ;;
    *) echo "usage: $0 [--root DIR]" >&2; exit 2 ;;
  esac
done
ROOT=${ROOT%/}
# shellcheck source=loader.sh
source "$(dirname "$0")/loader.sh"
loader_init "$ROOT"
die() { echo "ASSERT FAILED: $*" >&2; exit 1; }

nvcc="$ROOT/usr/local/cuda/bin/nvcc"
[ -x "$nvcc" ] || die "nvcc missing (/usr/local/cuda/bin/nvcc): nccl-tests cannot be built in a job"
torch_nccl=$("$ROOT/usr/local/bin/python3" - <<'PY' 2>/dev/null
import torch  # noqa: F401  (loads libtorch_cuda, which maps libnccl)
with open("/proc/self/maps") as maps:
    print(next((line.split()[-1] for line in maps if "libnccl.so" in line), ""))
PY
)
[ -n "$torch_nccl" ] || die "torch does not load libnccl (CPU-only torch?)"
nccl_home=$(dirname "$(dirname "$torch_nccl")")
[ -e "$nccl_home/include/nccl.h" ] || die "no nccl.h beside torch's NCCL ($nccl_home/include)"

# torch's NCCL wheel has only libnccl.so.2: -lnccl needs the unversioned name, so link through a
# private one (nccl-tests-build.sbatch does the same).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/lib"
ln -s "$torch_nccl" "$work/lib/libnccl.so"
cat > "$work/probe.cu" <<'CU'
#include <cstdio>
#include <nccl.h>
__global__ void mark(int* flag) { *flag = 1; }
int main() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return 1;
  std::printf("NCCL %d (kernel at %p)\n", version, reinterpret_cast<void*>(&mark));
  return 0;
}
CU
if ! out=$("$nvcc" -o "$work/probe" "$work/probe.cu" -I"$nccl_home/include" -L"$work/lib" -lnccl 2>&1); then
  die "nvcc cannot compile and link against torch's NCCL: $(tail -n3 <<< "$out" | tr '\n' ' ')"
fi
linked=$(resolve libnccl.so.2 "$work/probe")
[ -n "$linked" ] || die "a program linked with -lnccl cannot find libnccl.so.2 through the loader"
[ "$(readlink -f "$linked")" = "$(readlink -f "$torch_nccl")" ] \
  || die "a program linked with -lnccl loads $linked but torch loads $torch_nccl"
version=$(LD_LIBRARY_PATH=$(dirname "$linked") "$work/probe" 2>&1) || die "the nvcc-built program does not run: $version"
echo "ok: nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') builds against torch's NCCL ($linked): $version"
