"""Small root filesystems laid out like the slurmd image (image/README.md says where each path
comes from), for testing image/assert-image.sh and image/assert-toolchain.sh: real ELF shared
libraries built with gcc, with the sonames, NEEDED entries and run paths of the real ones, so
ldconfig and the loader rules decide; scripts where only a program's answer matters."""

from __future__ import annotations

import pathlib
import shutil
import stat
import subprocess

from tests.support.paths import REPO

ROOT = REPO
IMAGE = ROOT / "image"
SLURM_VERSION = "26.05.2"
# AWS's PyTorch DLC on Amazon Linux 2023 (aws/deep-learning-containers docker/pytorch/Dockerfile.cuda,
# 2.13 configs): torch in the venv /opt/venv made from /usr/bin/python3.12; EFA's RPMs in lib64.
VENV = "opt/venv"
SITE = f"{VENV}/lib/python3.12/site-packages"
EFA_LIB = "opt/amazon/efa/lib64"
MULTIARCH = "usr/lib/x86_64-linux-gnu"
# Ubuntu's libpmix2 (5.0.1 on 24.04): the library in pmix2/lib, a link in the multiarch directory.
PMIX_DIR = f"{MULTIARCH}/pmix2/lib"
# slurm-smd's mpi/pmix plugin (HAVE_PMIX_VER 5) and the OpenMPI 4.1 component that links libpmix.
PMIX_PLUGIN = f"{MULTIARCH}/slurm/mpi_pmix_v5.so"
OMPI_PMIX_COMPONENT = f"{MULTIARCH}/openmpi/lib/openmpi3/mca_pmix_ext3x.so"
# EFA >= 1.44 on Amazon Linux 2023 (scripts/docker/common/install_efa_amzn2023.sh).
OFI_LIB = "opt/amazon/ofi-nccl/lib64"
# The C runtime every library here needs: the host's, linked in (the image's comes from Ubuntu).
C_RUNTIME = ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")


def shared_library(
    path: pathlib.Path,
    needs: list[pathlib.Path] = (),
    soname: str | None = None,
    runpath: str | None = None,
    strings: tuple[str, ...] = (),
) -> None:
    """A shared library (soname path.name unless given) that needs the given libraries, with an
    optional DT_RUNPATH and string constants (as a compiled-in directory would be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / (path.name.replace(".", "_") + ".c")
    symbol = path.name.split(".")[0].replace("-", "_")
    body = "".join(f'const char *{symbol}_s{i} = "{s}";\n' for i, s in enumerate(strings))
    src.write_text(body + f"int {symbol}_marker(void) {{ return 1; }}\n")
    cmd = [
        "gcc",
        "-shared",
        "-fPIC",
        "-o",
        str(path),
        f"-Wl,-soname,{soname or path.name}",
        str(src),
        "-Wl,--no-as-needed",
    ]  # keep every NEEDED entry: the loader checks them
    if runpath:
        cmd += ["-Wl,--enable-new-dtags", f"-Wl,-rpath,{runpath}"]
    for dep in needs:
        cmd += [f"-L{dep.parent}", f"-l:{dep.name}"]
    subprocess.run(cmd, check=True)
    src.unlink()


def needing_version(path: pathlib.Path, version: str, soname: str = "libc.so.6") -> None:
    """A shared library that needs symbol version `version` of `soname`, as one built against a
    newer library than the root's would: linked against a stub of that soname defining it, the
    stub then removed."""
    stub_dir = path.parent / ".stub"
    stub_dir.mkdir(parents=True, exist_ok=True)
    (stub_dir / "stub.c").write_text("int newer_symbol(void) { return 0; }\n")
    (stub_dir / "stub.map").write_text(f"{version} {{ global: newer_symbol; local: *; }};\n")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-nostdlib",
            f"-Wl,--version-script={stub_dir / 'stub.map'}",
            f"-Wl,-soname,{soname}",
            "-o",
            str(stub_dir / soname),
            str(stub_dir / "stub.c"),
        ],
        check=True,
    )
    src = path.parent / (path.name.replace(".", "_") + ".c")
    src.write_text("int newer_symbol(void);\nint uses_newer_symbol(void) { return newer_symbol(); }\n")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(path),
            f"-Wl,-soname,{path.name}",
            str(src),
            "-Wl,--no-as-needed",
            str(stub_dir / soname),
        ],
        check=True,
    )
    src.unlink()
    shutil.rmtree(stub_dir)


def script(path: pathlib.Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def link(path: pathlib.Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def _host_library(name: str) -> str:
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    return next(
        line.split("=> ")[1]
        for line in out.splitlines()
        if line.strip().startswith(name + " ") and "x86-64" in line
    )


def pmix(root: pathlib.Path, directory: str = PMIX_DIR) -> pathlib.Path:
    """libpmix.so.2 as libpmix2 installs it: a versioned file, the soname link beside it."""
    real = root / directory / "libpmix.so.2.13.2"
    shared_library(real, soname="libpmix.so.2")
    link(root / directory / "libpmix.so.2", real.name)
    return root / directory / "libpmix.so.2"


def good_root(root: pathlib.Path) -> pathlib.Path:
    (root / "etc/ld.so.conf.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    for name in C_RUNTIME:
        link(root / MULTIARCH / name, _host_library(name))
    fabric = root / EFA_LIB / "libfabric.so.1"
    shared_library(fabric)
    # aws-ofi-nccl 1.16 (src/Makefile.am): the plugin file and a libnccl-net.so symlink to it.
    shared_library(root / OFI_LIB / "libnccl-net-ofi.so", [fabric])
    link(root / OFI_LIB / "libnccl-net.so", "libnccl-net-ofi.so")
    nccl = root / SITE / "nvidia/nccl/lib/libnccl.so.2"
    shared_library(nccl)
    (root / SITE / "nvidia/nccl/include").mkdir(parents=True)
    # PMIx in the multiarch directory's pmix2/lib, linked from the multiarch directory.
    pmix(root)
    link(root / MULTIARCH / "libpmix.so.2", "pmix2/lib/libpmix.so.2.13.2")
    # Slurm built with rpath (x_ac_pmix.m4's default): the plugin dlopens libpmix.so.2 through its run path.
    shared_library(root / PMIX_PLUGIN, runpath=f"/{PMIX_DIR}")
    # OpenMPI's PMIx component links libpmix; its run path is OpenMPI's own library directory.
    shared_library(
        root / OMPI_PMIX_COMPONENT, [root / MULTIARCH / "libpmix.so.2"], runpath=f"/{MULTIARCH}/openmpi/lib"
    )
    (root / "usr/local/lib").mkdir(parents=True, exist_ok=True)
    (root / "usr/local/cuda/lib64").mkdir(parents=True, exist_ok=True)
    script(
        root / "opt/amazon/efa/bin/fi_info",
        'case "$1" in --list) printf "efa:\\n    version: 200.0\\ntcp:\\n";; *) echo "fi_info: 2.6.0amzn1.0";; esac\n',
    )
    script(root / "usr/sbin/slurmd", f'echo "slurm {SLURM_VERSION}"\n')
    # The venv: pyvenv.cfg as `python3.12 -m venv` writes it (the patch release is Amazon Linux's;
    # any 3.12), the interpreter it names (Ubuntu's python3.12 in the image), and python3 on PATH
    # running the venv's (the Dockerfile's wrapper).
    (root / VENV / "pyvenv.cfg").parent.mkdir(parents=True, exist_ok=True)
    (root / VENV / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\n"
        "version = 3.12.12\nexecutable = /usr/bin/python3.12\n"
    )
    script(root / "usr/bin/python3.12", "exit 0\n")
    script(root / "usr/local/bin/python3", f'exec "$(dirname "$0")/../../../{VENV}/bin/python3" "$@"\n')
    # The venv's python3: `-c "import m"` fails for modules listed in broken-modules; `-` prints
    # the libnccl that torch maps (the real script reads /proc/self/maps).
    script(
        root / VENV / "bin/python3",
        f"""here=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$1" = "-c" ]; then
  m=${{2#import }}
  if grep -qx "$m" "$here/broken-modules" 2>/dev/null; then echo "ModuleNotFoundError: No module named '$m'" >&2; exit 1; fi
  exit 0
fi
cat > /dev/null
cat "$here/torch-nccl" 2>/dev/null || echo "$here/{SITE}/nvidia/nccl/lib/libnccl.so.2"
""",
    )
    (root / "etc/nccl.conf").write_text("NCCL_DEBUG=INFO\n")
    subprocess.run(
        ["bash", str(IMAGE / "register-libraries.sh"), "--root", str(root)], check=True, capture_output=True
    )
    return root


def assert_image(root: pathlib.Path, slurm_version: str = SLURM_VERSION) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(IMAGE / "assert-image.sh"), "--root", str(root), "--slurm-version", slurm_version],
        capture_output=True,
        text=True,
    )


def remove(path: pathlib.Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


# PyPI's CUDA 13.3 wheels, installed by `make test` (requirements-cuda.txt): a real nvcc of the
# DLC's CUDA minor, and the nvidia-nccl-cu13 wheel that torch's cu130 build loads.
CUDA_WHEELS = ROOT / ".cuda/nvidia"


def cuda_wheels() -> pathlib.Path:
    if not (CUDA_WHEELS / "cu13/bin/nvcc").exists():
        raise RuntimeError(f"no nvcc under {CUDA_WHEELS}: `make test` installs requirements-cuda.txt there")
    return CUDA_WHEELS


def toolchain_root(root: pathlib.Path) -> pathlib.Path:
    """good_root with the DLC's CUDA toolkit at /usr/local/cuda and torch's NCCL package being
    the real wheels."""
    wheels = cuda_wheels()
    good_root(root)
    remove(root / "usr/local/cuda")
    link(root / "usr/local/cuda", str(wheels / "cu13"))
    nccl = root / SITE / "nvidia/nccl"
    remove(nccl)
    link(nccl / "lib/libnccl.so.2", str(wheels / "nccl/lib/libnccl.so.2"))
    link(nccl / "include", str(wheels / "nccl/include"))
    return root


def assert_toolchain(root: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(IMAGE / "assert-toolchain.sh"), "--root", str(root)], capture_output=True, text=True
    )


# The container runtime as image/container-runtime.sh installs it, for image/assert-containers.sh:
# pyxis's plugin (a shared object leaving the SPANK API and Slurm's logging to the process that
# loads it, with pyxis's version banner and the plugin_version of the Slurm it was built for),
# the Slurm library defining that API, enroot, its two helpers with the enroot+caps capabilities,
# the GPU hook and nvidia-container-cli.
PYXIS_PLUGIN = f"{MULTIARCH}/slurm/spank_pyxis.so"
LIBSLURMFULL = f"{MULTIARCH}/slurm/libslurmfull.so"
CONTAINER_PINS = {
    "slurm": SLURM_VERSION,
    "pyxis": "0.24.0",
    "enroot": "4.1.2",
    "nvidia-container-cli": "1.17.8",
}
SPANK_SYMBOLS = ("spank_getenv", "spank_option_register", "slurm_error", "slurm_info")
HELPER_CAPABILITIES = {
    "usr/bin/enroot-mksquashovlfs": "cap_sys_admin+ep",
    "usr/bin/enroot-aufs2ovlfs": "cap_sys_admin,cap_mknod+ep",
}


def slurm_version_number(version: str) -> int:
    """SLURM_VERSION_NUMBER of a release (slurm/slurm_version.h: (major << 16) + (minor << 8) + micro)."""
    major, minor, micro = (int(p) for p in version.split("."))
    return (major << 16) + (minor << 8) + micro


def pyxis_plugin(
    path: pathlib.Path, *, version: str, slurm_version: str, symbols: tuple[str, ...] = SPANK_SYMBOLS
) -> None:
    """A plugin calling `symbols` without defining them, as pyxis leaves them to slurmstepd."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / "spank_pyxis.c"
    src.write_text(
        "".join(f"extern void {s}(void);\n" for s in symbols)
        + f'const char pyxis_banner[] = "pyxis: version v{version}";\n'
        + f"const unsigned int plugin_version = {slurm_version_number(slurm_version)};\n"
        + "void pyxis_calls(void) {"
        + "".join(f" {s}();" for s in symbols)
        + " }\n"
    )
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(src)], check=True)
    src.unlink()


def slurm_library(path: pathlib.Path, symbols: tuple[str, ...] = SPANK_SYMBOLS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / "libslurmfull.c"
    src.write_text("".join(f"void {s}(void) {{}}\n" for s in symbols))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(src)], check=True)
    src.unlink()


def grant(path: pathlib.Path, capabilities: str) -> None:
    subprocess.run(["setcap", capabilities, str(path)], check=True)


def container_root(root: pathlib.Path) -> pathlib.Path:
    pyxis_plugin(root / PYXIS_PLUGIN, version=CONTAINER_PINS["pyxis"], slurm_version=CONTAINER_PINS["slurm"])
    slurm_library(root / LIBSLURMFULL)
    script(root / "usr/bin/enroot", f'echo "{CONTAINER_PINS["enroot"]}"\n')
    for helper, capabilities in HELPER_CAPABILITIES.items():
        (root / helper).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy("/bin/true", root / helper)
        grant(root / helper, capabilities)
    script(root / "etc/enroot/hooks.d/98-nvidia.sh", "exit 0\n")
    cli = CONTAINER_PINS["nvidia-container-cli"]
    script(root / "usr/bin/nvidia-container-cli", f'printf "cli-version: {cli}\\nlib-version: {cli}\\n"\n')
    return root


def assert_containers(root: pathlib.Path, **pins: str) -> subprocess.CompletedProcess:
    pins = {**CONTAINER_PINS, **pins}
    return subprocess.run(
        [
            "bash",
            str(IMAGE / "assert-containers.sh"),
            "--root",
            str(root),
            "--slurm-version",
            pins["slurm"],
            "--pyxis-version",
            pins["pyxis"],
            "--enroot-version",
            pins["enroot"],
            "--nvidia-container-cli-version",
            pins["nvidia-container-cli"],
        ],
        capture_output=True,
        text=True,
    )
