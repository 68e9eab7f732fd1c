"""Debian's real Prometheus 3.5.3 (and promtool) from the sid root filesystem, scraping the real
slurmctld of the local test cluster (local_slurm.py) with the scrape jobs the stack gives the AMP
scraper (model/builders/metrics.py), and answering PromQL.

What differs from the cluster, and why:
- Discovery: there is no Kubernetes here, so each job's `kubernetes_sd_configs` becomes one static
  target, slurmctld's address, carrying the meta labels Kubernetes discovery would have given the
  controller Service's endpoint (ScrapeJob.discovered_labels). The job's path, its relabelling
  (the keep rule on those labels included) and its timeout stay as the stack writes them.
- Interval: the tests override scrape_interval (and a timeout under it) to SCRAPE_INTERVAL_S, so a
  test sees a fresh scrape within seconds instead of the stack's 30 s. That override is the only
  change to a job, and only this harness makes it.

The binaries run from the root with the root's own dynamic loader and C library (the way its
packages were built), as this user: no chroot or namespace is needed for a program that reads its
config and a data directory and talks TCP on the host's loopback, where slurmctld listens.
Only the process started here is stopped, by its PID.
"""

from __future__ import annotations

import json
import pathlib
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import yaml

from model.builders.metrics import SLURMCTLD_JOBS, ScrapeJob
from tests.support.local_slurm import slurm_root

SCRAPE_INTERVAL_S = 1
_LIBRARY_PATH = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")


def root_command(binary: str, suite: str = "sid") -> list[str]:
    """argv prefix that runs /usr/bin/<binary> of the root with the root's loader and libraries."""
    root = slurm_root(suite)
    return [
        str(root / "lib64/ld-linux-x86-64.so.2"),
        "--library-path",
        ":".join(str(root / p) for p in _LIBRARY_PATH),
        str(root / "usr/bin" / binary),
    ]


def promtool(
    *args: str, cwd: pathlib.Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*root_command("promtool"), *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def local_scrape_config(
    job: ScrapeJob, address: str, pod: str, node: str, interval_s: int = SCRAPE_INTERVAL_S
) -> dict:
    """The job as the stack writes it, with one static target for its discovery and the test's
    interval (the timeout kept under it, as Prometheus requires)."""
    config = job.scrape_config(
        {"static_configs": [{"targets": [address], "labels": job.discovered_labels(pod, node)}]}
    )
    config["scrape_interval"] = f"{interval_s}s"
    config["scrape_timeout"] = f"{interval_s}s"
    return config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


class LocalPrometheus:
    def __init__(
        self,
        workdir: pathlib.Path,
        slurmctld: str,
        pod: str,
        node: str,
        jobs: tuple[ScrapeJob, ...] = SLURMCTLD_JOBS,
        rule_files: Sequence[pathlib.Path] = (),
    ):
        self.dir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = {
            "global": {
                "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
                "evaluation_interval": f"{SCRAPE_INTERVAL_S}s",
            },
            "scrape_configs": [local_scrape_config(j, slurmctld, pod, node) for j in jobs],
        }
        if rule_files:  # evaluated every SCRAPE_INTERVAL_S, as AMP evaluates its rule groups
            self.config["rule_files"] = [str(p) for p in rule_files]
        self.jobs = jobs
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "LocalPrometheus":
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(self.config, sort_keys=False))
        log = open(self.dir / "prometheus.log", "ab")
        self.proc = subprocess.Popen(
            [
                *root_command("prometheus"),
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        try:
            self._until(self._ready, timeout, "Prometheus to be ready")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> "LocalPrometheus":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log(self) -> str:
        path = self.dir / "prometheus.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:]) if path.exists() else ""

    def _get(self, path: str, **params: str) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as answer:
            return json.loads(answer.read())

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{self.log()}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def _until(self, check, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.25)
        raise TimeoutError(f"timed out after {timeout} s waiting for {what}\n{self.log()}")

    def targets(self) -> list[dict]:
        """The active targets, as /api/v1/targets reports them."""
        return self._get("/api/v1/targets", state="active")["data"]["activeTargets"]

    def wait_for_scrapes(self, after: float | None = None, timeout: float = 30) -> list[dict]:
        """Every job's target up, each scraped since `after` (a time.time(); default now)."""
        since = time.time() if after is None else after

        def scraped() -> bool:
            targets = self.targets()
            return sorted(t["labels"]["job"] for t in targets) == sorted(j.name for j in self.jobs) and all(
                t["health"] == "up" and _timestamp(t["lastScrape"]) > since for t in targets
            )

        try:
            self._until(scraped, timeout, "every target to be scraped")
        except TimeoutError as e:
            raise TimeoutError(f"{e}\ntargets: {json.dumps(self.targets(), indent=1)}") from None
        return self.targets()

    def rule_groups(self) -> list[dict]:
        return self._get("/api/v1/rules")["data"]["groups"]

    def alerts(self) -> list[dict]:
        return self._get("/api/v1/alerts")["data"]["alerts"]

    def wait_for_rules(self, timeout: float = 30) -> None:
        """Every rule evaluated since now, without error."""
        since = time.time()

        def evaluated() -> bool:
            found = [r for g in self.rule_groups() for r in g["rules"]]
            if bad := [r for r in found if r.get("health") == "err"]:
                raise RuntimeError(f"rules failing: {bad}")
            return bool(found) and all(_timestamp(r["lastEvaluation"]) > since for r in found)

        self._until(evaluated, timeout, "every rule to be evaluated")

    def query(self, expr: str) -> list[Sample]:
        """An instant query's vector (a scalar answer as one sample without labels)."""
        answer = self._get("/api/v1/query", query=expr)
        if answer["status"] != "success":
            raise ValueError(f"{expr}: {answer}")
        data = answer["data"]
        if data["resultType"] == "scalar":
            return [Sample({}, float(data["result"][1]))]
        return [Sample(r["metric"], float(r["value"][1])) for r in data["result"]]


def _timestamp(rfc3339: str) -> float:
    """Prometheus's lastScrape (RFC 3339, nanoseconds, Z or an offset) as a Unix time."""
    head, frac, zone = re.fullmatch(r"([^.]+?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", rfc3339).groups()
    zone = "+00:00" if zone == "Z" else zone
    return datetime.fromisoformat(f"{head}.{(frac or '0')[:6]:0<6}{zone}").timestamp()
