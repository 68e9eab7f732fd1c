"""cluster_programs/state_volume_guard.py against a fake Kubernetes API: on SIGTERM it waits for the state
claim's PersistentVolume to go only when the claim itself is gone or going. Object shapes:
Kubernetes API reference, PersistentVolumeClaim and PersistentVolume (core/v1)."""

import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from components._parts.program_code import shipped_code
from components.state_volume_guard import MODULES
from model.builders.program_job import PACKAGE

TOKEN = "guard-token"
CLAIM_PATH = "/api/v1/namespaces/slurm/persistentvolumeclaims/slurm-controller-state"


class FakeApi:
    """The two objects the guard reads; tests change them while it runs."""

    def __init__(self):
        self.claim = {"metadata": {"name": "slurm-controller-state", "namespace": "slurm"}}
        self.volumes = [self.volume("pvc-0a1b", "slurm", "slurm-controller-state")]
        self.requests = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                api.requests.append((self.path, self.headers.get("Authorization")))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self.reply(401, {"kind": "Status", "code": 401})
                if self.path == CLAIM_PATH and api.claim is not None:
                    return self.reply(200, api.claim)
                if self.path == "/api/v1/persistentvolumes":
                    return self.reply(200, {"kind": "PersistentVolumeList", "items": list(api.volumes)})
                return self.reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def volume(name, namespace, claim, policy="Delete"):
        return {
            "metadata": {"name": name},
            "spec": {
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim},
                "persistentVolumeReclaimPolicy": policy,
            },
        }


@pytest.fixture
def api():
    fake = FakeApi()
    yield fake
    fake.server.shutdown()


@pytest.fixture
def guard(api, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    # Started as the Deployment starts it: the shipped package in the working directory,
    # `python3 -m cluster_programs.state_volume_guard`.
    package = tmp_path / PACKAGE
    package.mkdir()
    for name, text in shipped_code(MODULES).items():
        (package / name).write_text(text)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            f"{PACKAGE}.state_volume_guard",
            "--namespace",
            "slurm",
            "--claim",
            "slurm-controller-state",
            "--api",
            api.url,
            "--token-file",
            str(token),
            "--poll-seconds",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    assert proc.stdout.readline().startswith("guarding the volume of slurm/slurm-controller-state")
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _ends_within(proc, seconds):
    try:
        proc.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_a_drain_or_rollout_ends_the_guard_at_once(guard, api):
    guard.send_signal(signal.SIGTERM)
    assert _ends_within(guard, 5) and guard.returncode == 0
    assert "the claim is still there" in guard.stdout.read()


def test_after_the_claim_is_deleted_the_guard_waits_for_its_volume(guard, api):
    api.claim = None
    guard.send_signal(signal.SIGTERM)
    assert not _ends_within(guard, 1.5)
    api.volumes = []  # the driver deleted the EBS volume and its PersistentVolume
    assert _ends_within(guard, 5) and guard.returncode == 0
    out = guard.stdout.read()
    assert (
        "waiting for pvc-0a1b" in out and "no PersistentVolume of slurm/slurm-controller-state is left" in out
    )


def test_a_claim_being_deleted_counts_as_deleted(guard, api):
    api.claim["metadata"]["deletionTimestamp"] = "2026-12-01T20:00:00Z"
    guard.send_signal(signal.SIGTERM)
    assert not _ends_within(guard, 1.5)
    api.volumes = []
    assert _ends_within(guard, 5)


def test_volumes_of_other_claims_are_not_waited_for(guard, api):
    api.claim = None
    api.volumes = [
        FakeApi.volume("pvc-other", "slurm", "another-claim"),
        FakeApi.volume("pvc-elsewhere", "default", "slurm-controller-state"),
    ]
    guard.send_signal(signal.SIGTERM)
    assert _ends_within(guard, 5) and guard.returncode == 0


def test_a_volume_kept_on_purpose_is_not_waited_for(guard, api):
    api.claim = None
    api.volumes = [FakeApi.volume("pvc-0a1b", "slurm", "slurm-controller-state", policy="Retain")]
    guard.send_signal(signal.SIGTERM)
    assert _ends_within(guard, 5)
    assert "kept on purpose" in guard.stdout.read()


def test_the_guard_reads_with_its_service_account_token(guard, api):
    api.claim = None
    api.volumes = []
    guard.send_signal(signal.SIGTERM)
    assert _ends_within(guard, 5)
    assert api.requests and all(auth == f"Bearer {TOKEN}" for _, auth in api.requests)


def test_an_unreadable_claim_is_treated_as_going(guard, api, tmp_path):
    # A 401 (or an unreachable API) must not skip the wait while a volume may still exist.
    (tmp_path / "token").write_text("wrong-token")
    guard.send_signal(signal.SIGTERM)
    assert not _ends_within(guard, 1.5)
    (tmp_path / "token").write_text(TOKEN)
    api.volumes = []
    assert _ends_within(guard, 5)
