"""cluster_programs/incluster.py against a local HTTP server that answers as the API server does: JSON for
GET, and for exec a 101 upgrade then v4.channel.k8s.io messages (RFC 6455 frames; channel byte
1 stdout, 2 stderr, 3 the metav1.Status, kubernetes/kubernetes staging/src/k8s.io/client-go/
tools/remotecommand/v4.go)."""

import http.client
import http.server
import json
import struct
import threading
import urllib.parse

import pytest

from cluster_programs import incluster

OK = {"metadata": {}, "status": "Success"}
EXIT_3 = {
    "metadata": {},
    "status": "Failure",
    "message": "command terminated with non-zero exit code",
    "reason": "NonZeroExitCode",
    "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
}


def frame(payload: bytes, opcode: int = 2) -> bytes:
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []
    exec_messages: list[bytes] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        Handler.seen.append((url.path, urllib.parse.parse_qs(url.query), dict(self.headers)))
        if url.path.endswith("/exec"):
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Protocol", incluster.EXEC_PROTOCOL)
            self.end_headers()
            self.wfile.write(b"".join(Handler.exec_messages) + frame(b"", opcode=8))
            self.close_connection = True
            return
        body, status = (
            (json.dumps({"items": [{"metadata": {"name": "p"}}]}).encode(), 200)
            if url.path.endswith("/pods")
            else (b'{"kind":"Status","reason":"Forbidden"}', 403)
        )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Handler.seen = []
    port = server.server_address[1]
    yield incluster.Api(
        "127.0.0.1", port, "sa-token", lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    )
    server.shutdown()
    server.server_close()


def test_exec_returns_output_and_success(api):
    Handler.exec_messages = [
        frame(b"\x01NodeName=slinky-0 State=IDLE\n"),
        frame(b"\x02warn\n"),
        frame(b"\x03" + json.dumps(OK).encode()),
    ]
    code, out = api.exec("slurm", "slurm-controller-0", "slurmctld", ["scontrol", "-o", "show", "node"])
    assert (code, out) == (0, "NodeName=slinky-0 State=IDLE\nwarn\n")
    path, query, headers = Handler.seen[0]
    assert path == "/api/v1/namespaces/slurm/pods/slurm-controller-0/exec"
    assert query["command"] == ["scontrol", "-o", "show", "node"] and query["container"] == ["slurmctld"]
    assert (
        headers["Authorization"] == "Bearer sa-token"
        and headers["Sec-WebSocket-Protocol"] == "v4.channel.k8s.io"
    )


def test_exec_reads_a_long_output_and_the_exit_code(api):
    long = b"x" * 70000
    Handler.exec_messages = [frame(b"\x01" + long), frame(b"\x03" + json.dumps(EXIT_3).encode())]
    code, out = api.exec("slurm", "slurm-controller-0", "slurmctld", ["scontrol"])
    assert code == 3 and len(out) == 70000


def test_exec_without_a_status_is_an_error(api):
    Handler.exec_messages = [frame(b"\x01partial")]
    with pytest.raises(incluster.ApiError, match="without a status"):
        api.exec("slurm", "slurm-controller-0", "slurmctld", ["scontrol"])


def test_get_lists_and_names_a_refused_call(api):
    cluster = incluster.InClusterNodeSet(
        api, "slurm", "slurm-worker-slinky", "slurm-controller-0", "slurmctld"
    )
    assert cluster.pods("app.kubernetes.io/name=slurmd") == [{"metadata": {"name": "p"}}]
    assert Handler.seen[0][:2] == (
        "/api/v1/namespaces/slurm/pods",
        {"labelSelector": ["app.kubernetes.io/name=slurmd"]},
    )
    with pytest.raises(incluster.ApiError, match="nodesets/slurm-worker-slinky: HTTP 403"):
        cluster.nodeset()


def test_a_failing_scontrol_is_an_error_naming_the_command(api):
    Handler.exec_messages = [
        frame(b"\x02slurm_load_node error: Unable to contact slurm controller\n"),
        frame(
            b"\x03"
            + json.dumps({**EXIT_3, "details": {"causes": [{"reason": "ExitCode", "message": "1"}]}}).encode()
        ),
    ]
    cluster = incluster.InClusterNodeSet(
        api, "slurm", "slurm-worker-slinky", "slurm-controller-0", "slurmctld"
    )
    with pytest.raises(incluster.ApiError, match="scontrol -o show node in slurm-controller-0 exited 1"):
        cluster.slurm(["scontrol", "-o", "show", "node"])


def test_outside_a_pod_the_missing_service_account_is_named(tmp_path):
    with pytest.raises(incluster.ApiError, match="not inside a pod with a service account"):
        incluster.Api.from_service_account({}, str(tmp_path))
