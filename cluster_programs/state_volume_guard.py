"""Holds `pulumi destroy` until the Slurm controller's state volume is really gone.

Runs as the only container of a one-replica Deployment that Pulumi deletes after the state claim
and before the EBS CSI driver, its StorageClass and the nodes. Deleting a claim is quick; the EBS
volume behind it is deleted afterwards, asynchronously, by the driver's provisioner, which then
removes the PersistentVolume. So on SIGTERM, when the claim is gone or going, this waits until no
PersistentVolume is bound to it any more; Pulumi's foreground delete of the Deployment waits for
this pod to end. When the claim is still there (a node drain, a rollout), it exits at once.

Standard library only: it runs in a stock Python image with the pod's service account.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request

ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POLL_SECONDS = 5.0


class Api:
    """GETs against the Kubernetes API with the pod's service account token."""

    def __init__(self, base: str, token_file: str, ca_file: str | None):
        self.base, self.token_file = base.rstrip("/"), token_file
        self.context = ssl.create_default_context(cafile=ca_file) if base.startswith("https") else None

    def get(self, path: str) -> dict | None:
        """The object at path, or None when it does not exist."""
        with open(self.token_file) as f:
            token = f.read().strip()
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise


def claim_released(api: Api, namespace: str, claim: str) -> bool:
    """Whether the claim is deleted or being deleted."""
    found = api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}")
    return found is None or bool(found.get("metadata", {}).get("deletionTimestamp"))


def bound_volumes(api: Api, namespace: str, claim: str) -> list[dict]:
    """The PersistentVolumes whose claimRef names the claim."""
    items = (api.get("/api/v1/persistentvolumes") or {}).get("items", [])
    return [
        pv
        for pv in items
        if (pv.get("spec", {}).get("claimRef") or {}).get("namespace") == namespace
        and pv["spec"]["claimRef"].get("name") == claim
    ]


def wait_for_volume_deletion(api: Api, namespace: str, claim: str, poll: float) -> None:
    while True:
        try:
            volumes = bound_volumes(api, namespace, claim)
        except (OSError, ValueError) as e:  # API briefly unreachable: keep trying
            print(f"cannot list PersistentVolumes yet ({e})", flush=True)
            time.sleep(poll)
            continue
        if not volumes:
            print(f"no PersistentVolume of {namespace}/{claim} is left", flush=True)
            return
        kept = [
            pv["metadata"]["name"]
            for pv in volumes
            if pv["spec"].get("persistentVolumeReclaimPolicy") != "Delete"
        ]
        if kept:
            print(
                f"{', '.join(kept)} is kept on purpose (reclaim policy is not Delete); not waiting",
                flush=True,
            )
            return
        print(
            f"waiting for {', '.join(pv['metadata']['name'] for pv in volumes)} "
            "(the EBS volume) to be deleted",
            flush=True,
        )
        time.sleep(poll)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--claim", required=True)
    parser.add_argument("--api", default=None, help="API server URL (default: the in-cluster one)")
    parser.add_argument("--token-file", default=f"{ACCOUNT_DIR}/token")
    parser.add_argument("--ca-file", default=f"{ACCOUNT_DIR}/ca.crt")
    parser.add_argument("--poll-seconds", type=float, default=POLL_SECONDS)
    args = parser.parse_args(argv)
    base = args.api or (
        f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
    )
    api = Api(base, args.token_file, args.ca_file)

    # PID 1 ignores SIGTERM without a handler; the kubelet sends it when the pod is deleted.
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    print(f"guarding the volume of {args.namespace}/{args.claim}", flush=True)
    while not stopping:
        time.sleep(1)
    try:
        released = claim_released(api, args.namespace, args.claim)
    except (OSError, ValueError) as e:
        print(f"cannot read the claim ({e}); assuming it is being deleted", flush=True)
        released = True
    if not released:
        print("the claim is still there: leaving without waiting", flush=True)
        return 0
    wait_for_volume_deletion(api, args.namespace, args.claim, args.poll_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
