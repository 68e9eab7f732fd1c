"""The Kubernetes API from inside a pod, with the standard library only (the readiness Job runs
on a plain Python image): GET with the pod's service-account token, and exec over a WebSocket.

- Service-account credentials: /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt} and
  KUBERNETES_SERVICE_HOST/PORT (Kubernetes docs, "Accessing the Kubernetes API from a Pod").
- Exec: GET .../pods/<pod>/exec upgraded to a WebSocket (RFC 6455) with subprotocol
  v4.channel.k8s.io; every binary message starts with its channel byte (1 stdout, 2 stderr,
  3 the final metav1.Status: Success, or Failure with reason NonZeroExitCode and a cause of type
  ExitCode) (kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/remotecommand/
  constants.go and staging/src/k8s.io/client-go/tools/remotecommand/v4.go).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import struct
import urllib.parse
from typing import Callable, Mapping

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXEC_PROTOCOL = "v4.channel.k8s.io"


class ApiError(RuntimeError):
    """A Kubernetes API call failed; the message names the call and the answer."""


def _read_frames(stream) -> list[tuple[int, bytes]]:
    """Every server message until close: (opcode, payload). Server frames are never masked."""

    def exactly(n: int) -> bytes:
        buf = stream.read(n)
        if len(buf) < n:
            raise EOFError
        return buf

    frames, partial, opcode = [], b"", 0
    while True:
        try:
            b0, b1 = exactly(2)
        except EOFError:
            return frames
        length = b1 & 0x7F
        if length == 126:
            length = struct.unpack(">H", exactly(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", exactly(8))[0]
        payload = exactly(length)
        op = b0 & 0x0F
        if op == 8:  # close
            return frames
        if op in (9, 10):  # ping/pong: nothing to keep
            continue
        if op != 0:
            opcode, partial = op, b""
        partial += payload
        if b0 & 0x80:  # FIN
            frames.append((opcode, partial))
            partial = b""


def exec_result(frames: list[tuple[int, bytes]]) -> tuple[int, str]:
    """(exit code, stdout+stderr) from the v4 channel messages."""
    out, code = [], None
    for _, payload in frames:
        if not payload:
            continue
        channel, data = payload[0], payload[1:]
        if channel in (1, 2):
            out.append(data.decode(errors="replace"))
        elif channel == 3 and data:
            status = json.loads(data)
            if status.get("status") == "Success":
                code = 0
            else:
                causes = (status.get("details") or {}).get("causes") or []
                exit_codes = [c.get("message") for c in causes if c.get("reason") == "ExitCode"]
                code = int(exit_codes[0]) if exit_codes else 1
                if not exit_codes:
                    out.append(status.get("message", ""))
    if code is None:
        raise ApiError("exec ended without a status message")
    return code, "".join(out)


class Api:
    def __init__(self, host: str, port: int, token: str, connect: Callable[[], http.client.HTTPConnection]):
        self.host, self.port, self.token, self._connect = host, port, token, connect

    @classmethod
    def from_service_account(cls, env: Mapping[str, str], sa_dir: str = SA_DIR) -> "Api":
        try:
            host, port = env["KUBERNETES_SERVICE_HOST"], int(env["KUBERNETES_SERVICE_PORT"])
            with open(os.path.join(sa_dir, "token")) as f:
                token = f.read().strip()
        except (KeyError, OSError, ValueError) as e:
            raise ApiError(f"not inside a pod with a service account: {e}") from None
        context = ssl.create_default_context(cafile=os.path.join(sa_dir, "ca.crt"))
        return cls(
            host, port, token, lambda: http.client.HTTPSConnection(host, port, context=context, timeout=60)
        )

    def get(self, path: str) -> dict:
        conn = self._connect()
        try:
            conn.request(
                "GET", path, headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            )
            resp = conn.getresponse()
            body = resp.read()
        except OSError as e:
            raise ApiError(f"GET {path}: {e}") from None
        finally:
            conn.close()
        if resp.status != 200:
            raise ApiError(f"GET {path}: HTTP {resp.status} {body[:300].decode(errors='replace')}")
        return json.loads(body)

    def exec(self, namespace: str, pod: str, container: str, argv: list[str]) -> tuple[int, str]:
        query = urllib.parse.urlencode(
            [
                ("container", container),
                *(("command", a) for a in argv),
                ("stdout", "true"),
                ("stderr", "true"),
            ]
        )
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/exec?{query}"
        conn = self._connect()
        try:
            conn.putrequest("GET", path, skip_accept_encoding=True)
            for k, v in {
                "Authorization": f"Bearer {self.token}",
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Protocol": EXEC_PROTOCOL,
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            }.items():
                conn.putheader(k, v)
            conn.endheaders()
            resp = conn.getresponse()
            if resp.status != 101:
                raise ApiError(
                    f"exec in {namespace}/{pod}: HTTP {resp.status} "
                    f"{resp.read()[:300].decode(errors='replace')}"
                )
            # The response's buffered reader may already hold the first frames.
            return exec_result(_read_frames(resp.fp))
        except OSError as e:
            raise ApiError(f"exec in {namespace}/{pod}: {e}") from None
        finally:
            conn.close()


class InClusterNodeSet:
    """cluster_programs.rollout.Cluster over the API: the NodeSet, its pods, scontrol in one fixed pod."""

    def __init__(self, api: Api, namespace: str, nodeset: str, slurm_pod: str, slurm_container: str):
        self.api, self.namespace, self.name = api, namespace, nodeset
        self.slurm_pod, self.slurm_container = slurm_pod, slurm_container

    def nodeset(self) -> dict:
        return self.api.get(
            f"/apis/slinky.slurm.net/v1beta1/namespaces/{self.namespace}/nodesets/{self.name}"
        )

    def pods(self, selector: str) -> list[dict]:
        if not selector:  # a NodeSet the operator has not reconciled yet selects nothing
            return []
        query = urllib.parse.urlencode({"labelSelector": selector})
        return self.api.get(f"/api/v1/namespaces/{self.namespace}/pods?{query}")["items"]

    def slurm(self, argv: list[str]) -> str:
        code, out = self.api.exec(self.namespace, self.slurm_pod, self.slurm_container, argv)
        if code != 0:
            raise ApiError(f"{' '.join(argv)} in {self.slurm_pod} exited {code}: {out.strip()[-300:]}")
        return out
