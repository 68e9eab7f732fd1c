"""Stand-ins for what image/ecr-password.sh calls, on one HTTP server at 127.0.0.1 (the test
cluster's pods share this machine's network namespace: tests/support/local_slurm.py):
- EKS Pod Identity's agent: GET /v1/credentials answers the pod's token only, given as the
  Authorization header's whole text (aws/eks-pod-identity-agent v0.1.37
  pkg/handlers/eks_credential_handler.go), with the fields of pkg/credentials/model.go;
- ECR's API: POST, JSON 1.1, checks the SigV4 signature with botocore's signer over what was sent
  and answers GetAuthorizationToken as the API reference shows
  (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_GetAuthorizationToken.html):
  authorizationToken is base64 of "AWS:<password>".
Each records what it was asked, so a test can tell the helper ran, and how."""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

REGION = "eu-west-2"
POD_TOKEN = "eyJhbGciOiJSUzI1NiJ9.pod-identity-token.signature"
ACCESS_KEY = "ASIAEXAMPLEPODROLE00"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEPodSession+Token/Example=="
# The registry password ECR's stand-in issues.
PASSWORD = "eyJwYXlsb2FkIjoiZWNyLXBhc3N3b3JkIn0="
TARGET = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"
AGENT_PATH = "/v1/credentials"


@dataclass(frozen=True)
class EcrCall:
    """One call ECR's stand-in answered: its X-Amz-Target, and what is wrong with its signature
    (None: signed by the pod's keys for ecr in REGION over what was sent)."""

    target: str | None
    signature_problem: str | None


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


@dataclass
class PodIdentityStandIns:
    """The agent and ECR's API at `url`: `agent_url` is the agent's credentials URI, `url` ECR's
    endpoint. `ecr_refuses`: ECR answers AccessDeniedException to a well-signed call."""

    ecr_refuses: bool = False
    # Every token the agent was shown, and every call ECR answered, in order.
    agent_tokens: list[str | None] = field(default_factory=list)
    ecr_calls: list[EcrCall] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def agent_url(self) -> str:
        return f"{self.url}{AGENT_PATH}"

    def start(self) -> PodIdentityStandIns:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _handler(state: PodIdentityStandIns):
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
            token = self.headers.get("Authorization")
            state.agent_tokens.append(token)
            if self.path != AGENT_PATH or token != POD_TOKEN:
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
            problem = _signature_problem("POST", self.headers["Host"], self.path, self.headers, body)
            state.ecr_calls.append(EcrCall(self.headers.get("X-Amz-Target"), problem))
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
