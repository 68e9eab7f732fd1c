"""Small root filesystems shaped like the slurmd image, for testing image/assert-image.sh:
real ELF shared libraries (built with gcc) where the loader matters, scripts where a program's
answer is all that matters."""
from __future__ import annotations

import pathlib
import shutil
import stat
import subprocess

IMAGE = pathlib.Path(__file__).resolve().parent.parent / "image"
SLURM_VERSION = "26.05.2"
SITE = "usr/local/lib/python3.12/site-packages"


def shared_library(path: pathlib.Path, needs: list[pathlib.Path] = ()) -> None:
    """A shared library with soname path.name that needs the given libraries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".c")
    src.write_text(f"int {path.name.split('.')[0].replace('-', '_')}_marker(void) {{ return 1; }}\n")
    cmd = ["gcc", "-shared", "-fPIC", "-o", str(path), f"-Wl,-soname,{path.name}", str(src),
           "-Wl,--no-as-needed"]  # keep every NEEDED entry: the loader checks them
    for dep in needs:
        cmd += [f"-L{dep.parent}", f"-l:{dep.name}"]
    subprocess.run(cmd, check=True)
    src.unlink()


def script(path: pathlib.Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def good_root(root: pathlib.Path) -> pathlib.Path:
    fabric = root / "opt/amazon/efa/lib/libfabric.so.1"
    shared_library(fabric)
    shared_library(root / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", [fabric])
    nccl = root / SITE / "nvidia/nccl/lib/libnccl.so.2"
    shared_library(nccl)
    pmix = root / "usr/lib/x86_64-linux-gnu/libpmix.so.2"
    shared_library(pmix)
    shared_library(root / "usr/lib/x86_64-linux-gnu/slurm/mpi_pmix_v5.so", [pmix])
    (root / "usr/local/lib").mkdir(parents=True, exist_ok=True)
    (root / "usr/local/cuda/lib64").mkdir(parents=True, exist_ok=True)
    script(root / "opt/amazon/efa/bin/fi_info",
            'case "$1" in --list) printf "efa:\\n    version: 200.0\\ntcp:\\n";; *) echo "fi_info: 2.6.0amzn1.0";; esac\n')
    script(root / "usr/sbin/slurmd", f'echo "slurm {SLURM_VERSION}"\n')
    # python3: `-c "import m"` fails for modules listed in broken-modules; `-` prints the
    # libnccl that torch maps (the real script reads /proc/self/maps).
    script(root / "usr/local/bin/python3", f'''here=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$1" = "-c" ]; then
  m=${{2#import }}
  if grep -qx "$m" "$here/broken-modules" 2>/dev/null; then echo "ModuleNotFoundError: No module named '$m'" >&2; exit 1; fi
  exit 0
fi
cat > /dev/null
cat "$here/torch-nccl" 2>/dev/null || echo "$here/{SITE}/nvidia/nccl/lib/libnccl.so.2"
''')
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/nccl.conf").write_text("NCCL_DEBUG=INFO\n")
    subprocess.run(["bash", str(IMAGE / "register-libraries.sh"), "--root", str(root)],
                   check=True, capture_output=True)
    return root


def assert_image(root: pathlib.Path, slurm_version: str = SLURM_VERSION) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(IMAGE / "assert-image.sh"), "--root", str(root),
                           "--slurm-version", slurm_version], capture_output=True, text=True)


def remove(path: pathlib.Path) -> None:
    shutil.rmtree(path) if path.is_dir() else path.unlink()
