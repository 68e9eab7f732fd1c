"""Container jobs: the two files that turn `srun --container-image=...` on, rendered from paths so
the product (model/builders/slurm_values.py) and the real-Slurm test cluster (tests/slurm/) render
them the same way, each with its own directories.

plugstack.conf: one plain `required` line naming pyxis's plugin. slurmctld serves plugstack.conf to
every node in configless mode but not a file it `include`s, and a glob `include` makes slurmctld log
errors (seen on the test cluster: issue text "What a trial on this machine showed"), so the line is
in plugstack.conf itself and the plugin file is in every image that runs srun or slurmd.
`required`: a node where pyxis cannot load refuses the step rather than running it outside its
container (https://slurm.schedmd.com/spank.html#SECTION_CONFIGURATION, "required"/"optional").

enroot.conf: enroot reads /etc/enroot/enroot.conf (its ENROOT_SYSCONF_PATH) before anything else,
and pyxis does not pass the job's environment to enroot, so the paths belong there. enroot expands
each value with `eval echo` (NVIDIA/enroot v4.1.2 enroot.in, config::load), so `$(id -u)` gives
each user their own directories; enroot creates those with umask 077 (enroot.in, after
config::fini), so their parents (`enroot_directories`) must exist beforehand, world-writable and
sticky, or the first user's mkdir would lock everyone else out.
- runtime (ENROOT_RUNTIME_PATH: the running containers' state), data (ENROOT_DATA_PATH: unpacked
  root filesystems) and temp (ENROOT_TEMP_PATH: a layer being converted) on the node-local disk:
  the instance-store NVMe where the type has it, the root volume where not;
- cache (ENROOT_CACHE_PATH: the image layers a `docker://` import downloads) on /shared, so the
  nodes of a multi-node step share one copy of each layer;
- config (ENROOT_CONFIG_PATH): where enroot reads `.credentials` (netrc format, a password starting
  with `$` is command-substituted: NVIDIA/enroot v4.1.2 doc/cmd/import.md), so a registry's login
  is the cluster's and nothing has to be in the user's home.
(NVIDIA/enroot v4.1.2 doc/configuration.md lists each setting and its default.)
"""

from __future__ import annotations

from dataclasses import dataclass

# Where pyxis's Debian package puts its SPANK plugin (NVIDIA/pyxis v0.24.0 debian/rules: libdir
# /usr/lib/<multiarch>): Slinky's login-pyxis image has it there, and image/Dockerfile installs it
# there in the slurmd image, so one line names it on the login pod and on every worker.
PYXIS_PLUGIN = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
# enroot's system configuration directory as its packages build it (ENROOT_SYSCONF_PATH=/etc/enroot:
# NVIDIA/enroot v4.1.2 Makefile, sysconfdir), and the file in it it reads first.
ENROOT_SYSCONF_DIR = "/etc/enroot"
ENROOT_CONF = f"{ENROOT_SYSCONF_DIR}/enroot.conf"

# Each user's own subdirectory of a shared parent; evaluated by enroot at every run.
_PER_USER = "user-$(id -u)"


@dataclass(frozen=True)
class EnrootPaths:
    """Where enroot keeps what: `local` is a node-local directory (runtime, data, temp under it),
    `cache` a directory every node shares, `config` the directory holding `.credentials`."""

    local: str
    cache: str
    config: str

    @property
    def runtime(self) -> str:
        return f"{self.local}/enroot/runtime"

    @property
    def data(self) -> str:
        return f"{self.local}/enroot/data"

    @property
    def temp(self) -> str:
        return f"{self.local}/enroot/tmp"


def plugstack_conf(pyxis_plugin: str = PYXIS_PLUGIN) -> str:
    """plugstack.conf: pyxis, required, with its defaults (NVIDIA/pyxis v0.24.0 README, "Slurm
    plugstack configuration")."""
    return f"required {pyxis_plugin}\n"


def enroot_conf(paths: EnrootPaths) -> str:
    """enroot.conf: each user's runtime, data and temp under the node-local directory, their layer
    cache under the shared one, and the cluster's credentials directory."""
    lines = {
        "ENROOT_RUNTIME_PATH": f"{paths.runtime}/{_PER_USER}",
        "ENROOT_DATA_PATH": f"{paths.data}/{_PER_USER}",
        # enroot makes no temp directory of its own (only `mktemp -d -p` in it: src/common.sh), so
        # this one is the shared sticky directory itself, as /tmp is.
        "ENROOT_TEMP_PATH": paths.temp,
        "ENROOT_CACHE_PATH": f"{paths.cache}/{_PER_USER}",
        "ENROOT_CONFIG_PATH": paths.config,
    }
    return "".join(f"{key} {value}\n" for key, value in lines.items())


def enroot_directories(paths: EnrootPaths) -> tuple[str, ...]:
    """The directories to make mode 1777 (world-writable, sticky, as /tmp) before the first job: the
    parents of the per-user runtime, data and cache directories, which enroot makes itself with
    umask 077, and the temp directory, which it does not make."""
    return (paths.runtime, paths.data, paths.temp, paths.cache)
