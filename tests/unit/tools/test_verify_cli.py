"""tools/verify.py as a new user meets it: every expected failure is one line naming the cause and
the fix, with a documented exit status, and --json always prints one JSON document."""

import http.server
import json
import threading
import time

import pytest

from tools import verify

FIX = "pulumi stack output --json --show-secrets"


def kubeconfig(server: str) -> dict:
    """A kubeconfig of the shape pulumi-eks exports, pointing at `server` with a static token
    (no `aws eks get-token`, so the test needs no AWS CLI)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "k8s-aws-v1.test"}}],
    }


def outputs(**changes) -> dict:
    base = {
        "gpuInstanceType": "g6.12xlarge",
        "gpuNodeCount": 2,
        "loginHostname": "login.example",
        "kubeconfig": kubeconfig("http://127.0.0.1:1"),
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def run(capsys, argv):
    code = verify.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def written(tmp_path, content, name="outputs.json") -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_missing_outputs_file_says_how_to_write_it(tmp_path, capsys):
    code, out, err = run(capsys, [str(tmp_path / "outputs.json")])
    assert code == verify.EXIT_BAD_INPUT == 2
    assert err.strip().count("\n") == 0 and "no such file" in err and FIX in err and out == ""


def test_outputs_without_kubeconfig_name_the_missing_output(tmp_path, capsys):
    code, _, err = run(capsys, [written(tmp_path, outputs(kubeconfig=None))])
    assert code == 2 and "has no kubeconfig output" in err and FIX in err


def test_masked_kubeconfig_asks_for_show_secrets(tmp_path, capsys):
    code, _, err = run(capsys, [written(tmp_path, outputs(kubeconfig="[secret]"))])
    assert code == 2
    assert (
        "the kubeconfig output" in err and "is masked: run `pulumi stack output --json --show-secrets" in err
    )


def test_outputs_that_are_not_json_are_refused(tmp_path, capsys):
    code, _, err = run(capsys, [written(tmp_path, "Current stack outputs (2):\n")])
    assert code == 2 and "is not JSON (line 1" in err and FIX in err


def test_an_unknown_instance_type_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, [written(tmp_path, outputs(gpuInstanceType="g9.huge"))])
    assert code == 2 and "'g9.huge'" in err and "catalog" in err


def test_a_kubeconfig_without_a_cluster_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, [written(tmp_path, outputs(kubeconfig=json.dumps({"kind": "Config"})))])
    assert code == 2 and "is not a kubeconfig with a cluster" in err


def test_unreachable_api_is_one_line_within_seconds(tmp_path, capsys):
    import kubernetes  # noqa: F401 - imported before timing: the client's import is not the wait

    path = written(tmp_path, outputs())
    started = time.monotonic()
    code, out, err = run(capsys, [path])
    assert time.monotonic() - started < 10  # one attempt, no retry storm (a loaded CI machine is slow)
    assert code == verify.EXIT_UNREACHABLE == 3 and out == ""
    assert err.startswith("verify: the Kubernetes API at http://127.0.0.1:1 is unreachable (")
    assert "Connection refused" in err and err.strip().count("\n") == 0


def test_a_kubeconfig_whose_token_command_is_missing_says_to_install_it(tmp_path, capsys, monkeypatch):
    config = kubeconfig("http://127.0.0.1:1")
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", "c"],
        }
    }
    monkeypatch.setenv("PATH", str(tmp_path))  # no aws here
    code, _, err = run(capsys, [written(tmp_path, outputs(kubeconfig=config))])
    assert (
        code == 2
        and "the kubeconfig runs `aws` for a token but it is not on PATH: install the AWS CLI" in err
    )


def test_a_silent_api_times_out_instead_of_hanging(tmp_path, capsys, monkeypatch):
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the handshake; nothing ever answers
    monkeypatch.setattr(verify, "READ_TIMEOUT", 1)
    path = written(tmp_path, outputs(kubeconfig=kubeconfig(f"http://127.0.0.1:{silent.getsockname()[1]}")))
    started = time.monotonic()
    try:
        code, _, err = run(capsys, [path])
    finally:
        silent.close()
    assert time.monotonic() - started < 10
    assert code == 3 and "is unreachable (" in err and "Read timed out" in err


class _Refusing(http.server.BaseHTTPRequestHandler):
    """An API server that refuses every token, as EKS does for a principal without an access entry."""

    def do_GET(self):  # noqa: N802 - the handler's required name
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "Unauthorized",
                "reason": "Unauthorized",
                "code": 401,
            }
        ).encode()
        self.send_response(401, "Unauthorized")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing_api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_refused_credentials_say_which_identity_to_check(tmp_path, capsys, refusing_api):
    code, _, err = run(capsys, [written(tmp_path, outputs(kubeconfig=kubeconfig(refusing_api)))])
    assert code == 3 and "refused listing pods (401 Unauthorized)" in err
    assert "aws sts get-caller-identity" in err and "adminRoleArns" in err


@pytest.mark.parametrize("case,code", [("missing", 2), ("masked", 2), ("unreachable", 3)])
def test_json_mode_prints_one_document_for_every_error(tmp_path, capsys, case, code):
    path = {
        "missing": str(tmp_path / "absent.json"),
        "masked": written(tmp_path, outputs(kubeconfig="[secret]"), "masked.json"),
        "unreachable": written(tmp_path, outputs()),
    }[case]
    got, out, err = run(capsys, [path, "--json"])
    document = json.loads(out)
    assert got == code and document["exitCode"] == code
    assert document["passed"] is False and document["checks"] == []
    assert document["error"] and document["error"] in err


def test_outputs_can_come_from_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(outputs(kubeconfig="[secret]"))))
    code, _, err = run(capsys, ["-"])
    assert code == 2 and "output in stdin is masked" in err
