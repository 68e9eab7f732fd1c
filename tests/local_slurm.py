"""A real two-node Slurm cluster on this machine, from Debian's packages, for the job tests.

Each daemon gets its own UTS namespace (its node name as hostname) and each slurmd its own mount
namespace with a private /etc/hosts, so `hostname`, MASTER_ADDR=<first node> and torchrun's
rendezvous behave as on separate machines. Debian's build allows several slurmd on one host
(MULTIPLE_SLURMD). Only the daemons started here are stopped, by PID.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import stat
import subprocess
import time

NODES = ("n1", "n2")
BINARIES = ("slurmctld", "slurmd", "munged", "munge", "sbatch", "srun", "scontrol", "sinfo")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _state(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "gone"


class LocalSlurm:
    def __init__(self, root: pathlib.Path, cpus: int = 2, gpus: int = 2):
        self.root = root
        self.cpus = cpus
        self.gpus = gpus
        self.pids: list[int] = []
        self.conf = root / "etc/slurm.conf"
        self.socket = root / "munge/munge.socket"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_config(self) -> None:
        r = self.root
        for d in ("etc", "log", "state", "munge", *(f"spool-{n}" for n in NODES), *(f"tmp-{n}" for n in NODES)):
            (r / d).mkdir(parents=True, exist_ok=True)
        for n in NODES:
            (r / f"tmp-{n}").chmod(0o1777)
        memory = int(int(re.search(r"MemTotal:\s+(\d+)", pathlib.Path("/proc/meminfo").read_text()).group(1)) / 1024 / 4)
        nodes = "\n".join(f"NodeName={n} NodeHostname={n} NodeAddr=127.0.1.{i} Port={17100 + i} "
                          f"CPUs={self.cpus} RealMemory={memory} Gres=gpu:{self.gpus} State=UNKNOWN"
                          for i, n in enumerate(NODES, start=1))
        self.conf.write_text(f"""# test cluster for slinky-eks job tests
ClusterName=slinkytest
SlurmctldHost=ctl(127.0.0.1)
SlurmctldPort=17099
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool-%n
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
# two slurmd on one host: separate PMIx temporary directories
TmpFS={r}/tmp-%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# 1, not 2: a node set DOWN by hand stays DOWN (as the operator's stuck nodes do) instead of
# returning to service at slurmctld's next ping, so the resume tests see what they set.
ReturnToService=1
MpiDefault=none
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=600
{nodes}
PartitionName=slinky Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # With proctrack/linuxproc and task/none the cgroup plugin is only loaded, never used;
        # naming v1 keeps slurmd from probing a cgroup tree it may not be allowed to use.
        (r / "etc/cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")
        # GPUs as gres/gpu sees them: one character device per GPU (gres.conf File=), so steps
        # get CUDA_VISIBLE_DEVICES only when they request GPUs, as on the GPU nodes.
        gres = []
        for n in NODES:
            devices = r / f"dev-{n}"
            devices.mkdir(exist_ok=True)
            for i in range(self.gpus):
                if not (devices / f"nvidia{i}").exists():
                    os.mknod(devices / f"nvidia{i}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            gres.append(f"NodeName={n} Name=gpu File={devices}/nvidia[0-{self.gpus - 1}]\n")
        (r / "etc/gres.conf").write_text("".join(gres))
        hosts = pathlib.Path("/etc/hosts").read_text()
        hosts += "127.0.0.1 ctl\n" + "".join(f"127.0.1.{i} {n}\n" for i, n in enumerate(NODES, start=1))
        (r / "etc/hosts").write_text(hosts)

    def _daemon(self, cmd: str, pidfile: pathlib.Path) -> None:
        subprocess.run(cmd, shell=True, check=True, env=self.env)
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                self.pids.append(int(pidfile.read_text().split()[0]))
                return
            time.sleep(0.1)
        raise RuntimeError(f"{cmd!r} wrote no pid file; logs:\n{self.logs()}")

    def start(self) -> "LocalSlurm":
        self._write_config()
        r = self.root
        key = r / "munge/munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._daemon(f"munged --socket={self.socket} --key-file={key} --log-file={r}/log/munged.log "
                     f"--seed-file={r}/munge/seed --pid-file={r}/munge/munged.pid --force",
                     r / "munge/munged.pid")
        self._daemon(f"unshare --uts -- sh -c 'hostname ctl && exec slurmctld -f {self.conf}'",
                     r / "slurmctld.pid")
        for n in NODES:
            self._daemon(f"unshare --uts --mount --propagation private -- sh -c "
                         f"'mount --bind {r}/etc/hosts /etc/hosts && hostname {n} && "
                         f"exec slurmd -f {self.conf} -N {n}'", r / f"slurmd-{n}.pid")
        deadline = time.time() + 60
        while time.time() < deadline:
            states = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True,
                                    text=True, env=self.env).stdout.split("\n")
            if sum(1 for s in states if s.endswith(" idle")) == len(NODES):
                return self
            time.sleep(0.2)
        raise RuntimeError(f"nodes not idle after 60 s: {states}\n{self.logs()}")

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):  # daemons exit within a second or two; never leave one behind
                if not pathlib.Path(f"/proc/{pid}").exists() or "zombie" in _state(pid):
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
        self.pids.clear()

    def logs(self) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*.log")):
            out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(out)

    def sbatch(self, script: pathlib.Path, workdir: pathlib.Path, env: dict[str, str],
               timeout: float = 300) -> tuple[str, str, str]:
        """Submit, poll until the job ends; return (state, exit code, output)."""
        job_env = {**self.env, **env}
        out = subprocess.run(["sbatch", "--parsable", str(script)], cwd=workdir, env=job_env,
                             capture_output=True, text=True, check=True).stdout.strip()
        job = out.split(";")[0]
        deadline = time.time() + timeout
        info = ""
        while time.time() < deadline:
            info = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True,
                                  text=True, env=self.env).stdout
            state = re.search(r"JobState=(\S+)", info).group(1)
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                break
            time.sleep(0.5)
        else:
            subprocess.run(["scancel", job], env=self.env)
            raise TimeoutError(f"job {job} still {state} after {timeout} s\n{self.logs()}")
        stdout = pathlib.Path(re.search(r"StdOut=(\S+)", info).group(1))
        output = stdout.read_text(errors="replace") if stdout.exists() else f"(no output file {stdout})"
        return state, re.search(r"ExitCode=(\S+)", info).group(1), output
