"""A container registry on the test cluster's network: the part of the Docker Registry HTTP API V2
that a pull uses (the version check, a manifest by tag, blobs by digest: distribution/distribution
docs/spec/api.md at v2.8.3, "Pulling An Image"), over plain HTTP, serving one image of one gzip'd
layer, and counting every request it answers, so a test can tell whether a step pulled. With a
`login`, it answers only requests with that user and password in Basic auth and asks for them
(401 with a `WWW-Authenticate: Basic` challenge, as ECR does: the same spec, "Authentication"; RFC
7617) on any other, and counts apart the requests it answered with that login. The pods share this machine's network namespace (tests/support/local_slurm.py),
so they reach it at 127.0.0.1."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import pathlib
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Docker Image Manifest V2, Schema 2 (distribution/distribution docs/spec/manifest-v2-2.md).
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"
LAYER_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(rootfs: pathlib.Path) -> tuple[bytes, bytes]:
    """The tree as one layer: (its tar, the tar gzip'd), entries in a fixed order and time so
    the digests are the same every run."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(rootfs.rglob("*")):
            info = tar.gettarinfo(str(path), str(path.relative_to(rootfs)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isfile():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return raw.getvalue(), gzip.compress(raw.getvalue(), mtime=0)


class LocalRegistry:
    """`name:tag` made from the files under `rootfs`, served at 127.0.0.1:<port>."""

    def __init__(self, rootfs: pathlib.Path, name: str, tag: str, login: tuple[str, str] | None = None):
        self.name, self.tag = name, tag
        self.authorization = (
            None if login is None else "Basic " + base64.b64encode(":".join(login).encode()).decode()
        )
        diff, layer = _layer(rootfs)
        # The image configuration (moby/moby image/spec/spec.md, v1.2): what enroot's import reads.
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {"Env": ["PATH=/usr/bin:/bin"], "Cmd": ["/bin/sh"]},
                "rootfs": {"type": "layers", "diff_ids": [_digest(diff)]},
            }
        ).encode()
        self.manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": {"mediaType": CONFIG_TYPE, "size": len(config), "digest": _digest(config)},
                "layers": [{"mediaType": LAYER_TYPE, "size": len(layer), "digest": _digest(layer)}],
            }
        ).encode()
        self.blobs = {_digest(config): config, _digest(layer): layer}
        self.requests: list[str] = []
        # The requests that carried the login (with a `login` only).
        self.logged_in: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def reference(self) -> str:
        """The image as enroot and pyxis name it: REGISTRY#IMAGE:TAG (enroot doc/cmd/import.md)."""
        return f"127.0.0.1:{self.port}#{self.name}:{self.tag}"

    def start(self) -> "LocalRegistry":
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                request = f"{self.command} {self.path}"
                registry.requests.append(request)
                if registry.authorization:
                    if self.headers.get("Authorization") != registry.authorization:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="local-registry"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    registry.logged_in.append(request)
                found = registry._lookup(self.path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data, kind = found
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Docker-Content-Digest", _digest(data))
                self.send_header("Docker-Distribution-API-Version", "registry/2.0")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer(True)

            def do_HEAD(self) -> None:
                self._answer(False)

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def _lookup(self, path: str) -> tuple[bytes, str] | None:
        if path == "/v2/":
            return b"{}", "application/json"
        if path == f"/v2/{self.name}/manifests/{self.tag}":
            return self.manifest, MANIFEST_TYPE
        prefix = f"/v2/{self.name}/blobs/"
        if path.startswith(prefix) and path[len(prefix) :] in self.blobs:
            return self.blobs[path[len(prefix) :]], "application/octet-stream"
        return None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
