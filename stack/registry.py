"""A container registry read over its own HTTP API, with no Docker and no credentials: the digest a
tag points at and the tags a repository holds, for the images that are not on ECR (ghcr.io's
Slinky images). The OCI distribution-spec v1.1.0
(https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md): "Pulling manifests"
(`HEAD /v2/<name>/manifests/<reference>`, the digest in `Docker-Content-Digest`; 404 with
MANIFEST_UNKNOWN or NAME_UNKNOWN for what the registry does not hold) and "Listing tags"
(`GET /v2/<name>/tags/list`, paged by `Link: <...>; rel="next"`). A registry that wants a token
answers 401 with `WWW-Authenticate: Bearer realm=...,service=...,scope=...`, and its realm gives an
anonymous token for a public repository (the token protocol of distribution/distribution
docs/spec/auth/token.md; ghcr.io does so for public packages).

Why not pulumi-docker's getRegistryImage, which asks the same `HEAD`: its provider's Configure pings
a Docker daemon and fails without one ("failed to connect to any docker daemon":
pulumi/pulumi-docker provider/provider.go dockerNativeProvider.Configure and image.go
configureDockerClient; pulumi/pulumi-docker issue #1106), and `up` runs where there is no Docker;
nor does it list tags. Offline runs answer in the registry's place (devkit/offline_account.py
registry_answer, swapped in for `http` by devkit/offline_run.py).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from model.facts.image_references import parts, registry_host

# A manifest, an image index or a Docker manifest list: a multi-platform image answers its index's
# digest, the one every platform's pull resolves through (OCI image-spec v1.1.0 media types;
# Docker's manifest v2 schema 2).
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
# Docker Hub's registry API host, for a name without one or with docker.io (distribution/reference
# normalize.go); its official images live under library/.
DOCKER_HUB = "registry-1.docker.io"
# How many pages of a tags list are read at most (a registry pages by its own `n`).
TAG_PAGES = 20
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


def http(method: str, url: str, headers: dict[str, str]) -> Response:
    """One HTTPS request; an error status is a Response too, a failed connection an OSError."""
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return Response(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


class RegistryError(Exception):
    """The registry answered something the API does not (or could not be reached)."""


def repository(reference: str) -> tuple[str, str]:
    """(registry host, repository path) as a client addresses them."""
    name, _, _ = parts(reference)
    host = registry_host(reference)
    path = name.removeprefix(f"{host}/") if host else name
    if host in (None, "docker.io", "index.docker.io"):
        return DOCKER_HUB, path if "/" in path else f"library/{path}"
    return host, path


def _request(method: str, url: str, headers: dict[str, str], tokens: dict[str, str]) -> Response:
    """The request, again with a bearer token where the registry asks for one (tokens: by realm
    and scope, so each repository asks once)."""
    response = _send(method, url, headers)
    challenge = response.headers.get("www-authenticate", "")
    if response.status != 401 or not challenge.lower().startswith("bearer "):
        return response
    params = dict(_CHALLENGE.findall(challenge))
    key = f"{params.get('realm')} {params.get('scope')}"
    if key not in tokens:
        query = urllib.parse.urlencode({k: params[k] for k in ("service", "scope") if k in params})
        answer = _send("GET", f"{params.get('realm')}?{query}", {"Accept": "application/json"})
        if answer.status != 200:
            raise RegistryError(f"{params.get('realm')} gave no anonymous token ({answer.status})")
        body = json.loads(answer.body)
        tokens[key] = body.get("token") or body.get("access_token") or ""
    return _send(method, url, {**headers, "Authorization": f"Bearer {tokens[key]}"})


def _send(method: str, url: str, headers: dict[str, str]) -> Response:
    try:
        return http(method, url, headers)
    except OSError as e:
        raise RegistryError(f"{method} {url}: {e}") from e


class Registry:
    """The registries of the references asked, anonymously (model.checks.image_digests.Registry
    for the references not on ECR)."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def image_digest(self, reference: str) -> str | None:
        host, path = repository(reference)
        _, tag, _ = parts(reference)
        url = f"https://{host}/v2/{path}/manifests/{tag or 'latest'}"
        response = _request("HEAD", url, {"Accept": ", ".join(MANIFEST_TYPES)}, self._tokens)
        if response.status == 404:
            return None
        digest = response.headers.get("docker-content-digest")
        if response.status != 200 or not digest:
            raise RegistryError(f"HEAD {url}: {response.status} without a Docker-Content-Digest")
        return digest

    def image_tags(self, reference: str) -> list[str] | None:
        """Every tag of the repository, or None where the registry does not list them."""
        host, path = repository(reference)
        url, tags = f"https://{host}/v2/{path}/tags/list", []
        for _ in range(TAG_PAGES):
            response = _request("GET", url, {"Accept": "application/json"}, self._tokens)
            if response.status == 404:
                return []
            if response.status != 200:
                return None
            tags += json.loads(response.body).get("tags") or []
            following = _NEXT.search(response.headers.get("link", ""))
            if not following:
                break
            url = urllib.parse.urljoin(url, following.group(1))
        return sorted(set(tags))
