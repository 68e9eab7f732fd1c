"""Capture what the real slurmctld 26.05 serves under each metrics path of model/builders/metrics.py into
tests/data/slurm-metrics/ (reference for the dashboards and alerts, and the offline tests' input).

The cluster is the test cluster (tests/support/local_slurm.py) from the dev stack's render with
metrics on, put in a state where every series the dashboards read is non-trivial: one job running
on one GPU of slinky-0, slinky-1 drained by an admin, and a two-node job pending that no node can
run while the drain lasts. Run as root, with the cluster lock free:
    .venv/bin/python -m tests.support.capture_slurm_metrics
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time
import urllib.request

from model.builders.metrics import SLURM_METRICS_PATHS
from tests.support.paths import REPO

OUT = REPO / "tests/data/slurm-metrics"
ADMIN_REASON = "admin: ECC errors reported by the user"


def file_name(path: str) -> str:
    """/metrics/jobs -> jobs.txt"""
    return f"{path.rsplit('/', 1)[1]}.txt"


def capture(out: pathlib.Path = OUT) -> list[pathlib.Path]:
    from devkit.offline_run import run_program
    from tests.support.local_slurm import LocalSlurm
    from tests.support.slinky_conf import SLURMCTLD_PORT, Release
    from tests.support.slurm_cluster import WALKTHROUGH, rendered_with_metrics

    release = Release.from_documents(rendered_with_metrics(run_program("dev")))
    written = []
    with tempfile.TemporaryDirectory(prefix="slurm-metrics-") as tmp:
        cluster = LocalSlurm(pathlib.Path(tmp), release, WALKTHROUGH.gpu_model, WALKTHROUGH.gpus).start()
        try:
            for argv in (
                ["sbatch", "-N1", "--gres=gpu:1", "--wrap", "sleep 300"],
                ["scontrol", "update", "nodename=slinky-1", "state=drain", f"reason={ADMIN_REASON}"],
                ["sbatch", "-N2", "--wrap", "sleep 300"],
            ):
                result = cluster.run(argv)
                if result.returncode != 0:
                    raise RuntimeError(f"{argv}: {result.stderr}")
            cluster.wait_for_states({"slinky-0": "mixed", "slinky-1": "drained"})
            time.sleep(2)  # one scheduling pass over the pending job
            out.mkdir(parents=True, exist_ok=True)
            for path in SLURM_METRICS_PATHS:
                with urllib.request.urlopen(f"http://127.0.0.1:{SLURMCTLD_PORT}{path}", timeout=10) as answer:
                    (out / file_name(path)).write_bytes(answer.read())
                written.append(out / file_name(path))
        finally:
            cluster.stop()
    return written


if __name__ == "__main__":
    for f in capture():
        print(f.relative_to(REPO), file=sys.stdout)
