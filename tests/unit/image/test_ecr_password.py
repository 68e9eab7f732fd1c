"""image/ecr-password.sh prints ECR's password from the pod's Pod Identity credentials, run here
against two stand-ins: the Pod Identity agent's credentials endpoint, which answers only the pod's
token (aws/eks-pod-identity-agent v0.1.37 pkg/handlers/eks_credential_handler.go: the token's text
as the Authorization header; pkg/credentials/model.go: the answer's fields), and ECR's API, which
checks the SigV4 signature with botocore's signer and answers GetAuthorizationToken as the API
reference shows (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_GetAuthorizationToken.html).
Any failure is one line on stderr and a non-zero exit."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.support.paths import REPO

HELPER = REPO / "image" / "ecr-password.sh"
REGION = "eu-west-2"
POD_TOKEN = "eyJhbGciOiJSUzI1NiJ9.pod-identity-token.signature"
ACCESS_KEY = "ASIAEXAMPLEPODROLE00"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEPodSession+Token/Example=="
PASSWORD = "eyJwYXlsb2FkIjoiZWNyLXBhc3N3b3JkIn0="
TARGET = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"


@dataclass
class StandIns:
    """What the stand-ins saw and how they answer."""

    ecr_refuses: bool = False
    ecr_calls: list[dict] = field(default_factory=list)


def _signature_problem(method: str, host: str, path: str, headers, body: bytes) -> str | None:
    """None when the request carries a SigV4 signature of (ACCESS_KEY, SECRET_KEY) for ecr in
    REGION over what was sent, recomputed with botocore's signer; else what is wrong."""
    authorization = headers.get("Authorization", "")
    match = re.match(
        r"AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request, "
        r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$",
        authorization,
    )
    if not match:
        return f"no SigV4 Authorization header: {authorization!r}"
    key, region, service, signed, signature = match.groups()
    if (key, region, service) != (ACCESS_KEY, REGION, "ecr"):
        return f"signed for {key}/{region}/{service}"
    if headers.get("X-Amz-Security-Token") != SESSION_TOKEN:
        return "no session token"
    names = signed.split(";")
    request = AWSRequest(
        method=method, url=f"http://{host}{path}", data=body, headers={n: headers[n] for n in names}
    )
    request.context["timestamp"] = headers["X-Amz-Date"]
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "ecr", REGION)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if expected == signature else "signature does not match"


def _handler(state: StandIns):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, status: int, document: dict) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            # The agent: credentials for the pod's token only.
            if self.path != "/v1/credentials" or self.headers.get("Authorization") != POD_TOKEN:
                return self._answer(401, {"Message": "invalid token"})
            self._answer(
                200,
                {
                    "AccessKeyId": ACCESS_KEY,
                    "SecretAccessKey": SECRET_KEY,
                    "Token": SESSION_TOKEN,
                    "AccountId": "111122223333",
                    "Expiration": "2026-12-05T04:00:00Z",
                },
            )

        def do_POST(self):
            # ECR's JSON 1.1 API.
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.ecr_calls.append(dict(self.headers))
            problem = _signature_problem("POST", self.headers["Host"], self.path, self.headers, body)
            if problem:
                return self._answer(403, {"__type": "InvalidSignatureException", "message": problem})
            if self.headers.get("X-Amz-Target") != TARGET or not self.headers.get(
                "Content-Type", ""
            ).startswith("application/x-amz-json-1.1"):
                return self._answer(400, {"__type": "UnknownOperationException"})
            if state.ecr_refuses:
                return self._answer(
                    400,
                    {
                        "__type": "AccessDeniedException",
                        "message": "not authorized to perform: ecr:GetAuthorizationToken",
                    },
                )
            token = base64.b64encode(f"AWS:{PASSWORD}".encode()).decode()
            self._answer(
                200,
                {
                    "authorizationData": [
                        {
                            "authorizationToken": token,
                            "expiresAt": 1.7649e9,
                            "proxyEndpoint": f"https://111122223333.dkr.ecr.{REGION}.amazonaws.com",
                        }
                    ]
                },
            )

    return Handler


@pytest.fixture
def stand_ins():
    state = StandIns()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _run(
    tmp_path,
    base_url: str,
    token: str | None = POD_TOKEN,
    env: dict[str, str] | None = None,
    endpoint: str = "",
):
    """The helper as enroot runs it from the cluster's .credentials: the job's environment, which
    pyxis gives enroot (no Pod Identity variable in it), the agent and token file as arguments."""
    token_file = tmp_path / "eks-pod-identity-token"
    if token is not None:
        token_file.write_text(token)
    return subprocess.run(
        ["/bin/sh", str(HELPER), REGION, endpoint or base_url, f"{base_url}/v1/credentials", str(token_file)],
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
    )


def test_prints_the_password_ecr_answers_to_a_signed_call(tmp_path, stand_ins):
    state, base_url = stand_ins
    result = _run(tmp_path, base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PASSWORD + "\n"
    assert [call["X-Amz-Target"] for call in state.ecr_calls] == [TARGET]


def test_a_token_the_agent_refuses_fails_with_one_line(tmp_path, stand_ins):
    state, base_url = stand_ins
    result = _run(tmp_path, base_url, token="another-pods-token")
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("ecr-password: the credentials endpoint refused:")
    assert state.ecr_calls == []


def test_a_call_ecr_refuses_fails_with_one_line_naming_the_error(tmp_path, stand_ins):
    state, base_url = stand_ins
    state.ecr_refuses = True
    result = _run(tmp_path, base_url)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"ecr-password: ECR refused GetAuthorizationToken in {REGION}:")
    assert "AccessDeniedException" in result.stderr


def test_a_proxy_the_job_names_never_carries_the_pods_token(tmp_path, stand_ins):
    # The job's own environment and ~/.curlrc, both naming a proxy that answers nothing (port 9,
    # discard): the agent (127.0.0.1) is called directly and the user's curl configuration is not
    # read. ECR's stand-in (plain HTTP here, by the name localhost) is left out of the job's proxy,
    # as a job's own proxy may well carry the call to ECR's HTTPS endpoint.
    _, base_url = stand_ins
    home = tmp_path / "home"
    home.mkdir()
    (home / ".curlrc").write_text('proxy = "http://127.0.0.1:9"\n')
    proxy = {"http_proxy": "http://127.0.0.1:9", "no_proxy": "localhost", "HOME": str(home)}
    endpoint = base_url.replace("127.0.0.1", "localhost")
    result = _run(tmp_path, base_url, env=proxy, endpoint=endpoint)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PASSWORD + "\n"


def test_a_pod_without_pod_identity_fails_with_one_line(tmp_path, stand_ins):
    _, base_url = stand_ins
    result = _run(tmp_path, base_url, token=None)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr == (
        f"ecr-password: cannot read the Pod Identity token file '{tmp_path}/eks-pod-identity-token': "
        "does this pod's service account have an EKS Pod Identity association?\n"
    )


def test_the_secrets_never_reach_a_command_line():
    # Every user of the pod can read /proc/<pid>/cmdline: the keys and tokens go to curl through
    # its standard input. Each command as the shell reads it (continuation lines joined), from
    # curl's name on.
    commands = HELPER.read_text().replace("\\\n", " ").splitlines()
    code = [line for line in commands if not line.lstrip().startswith("#")]
    curl_arguments = [line.split("| curl ", 1)[1] for line in code if "| curl " in line]
    assert len(curl_arguments) == 2
    for variable in ("$token", "$key", "$secret", "$session"):
        assert [a for a in curl_arguments if variable in a] == [], variable
