"""How Pulumi waits for the program's Kubernetes objects, so a failed Job never wedges later `up`s; its
TIMEOUT annotation is the one spelling of pulumi.com/timeoutSeconds, which the login Service and
the image pre-pull DaemonSet carry too."""

from __future__ import annotations

# Annotation names from pulumi-kubernetes (provider/pkg/metadata/annotations.go, v4.x):
# - replaceUnready: a Job that failed or never became ready is replaced on the next `up`,
#   instead of being awaited again (and failing again) under the same name;
# - timeoutSeconds: how long `up` waits for the Job to complete (the provider's default is
#   10 minutes, unrelated to the Job's own deadline). A minute past the Job's
#   activeDeadlineSeconds, so `up` reports the Job's own DeadlineExceeded, not a bare timeout.
REPLACE_UNREADY = "pulumi.com/replaceUnready"
TIMEOUT = "pulumi.com/timeoutSeconds"


AWAIT_MARGIN_SECONDS = 60


def job_annotations(active_deadline_seconds: int) -> dict[str, str]:
    """A Job's annotations: awaited for as long as its activeDeadlineSeconds lets it run, and
    replaced on the next `up` when it did not complete."""
    return {REPLACE_UNREADY: "true", TIMEOUT: str(active_deadline_seconds + AWAIT_MARGIN_SECONDS)}
