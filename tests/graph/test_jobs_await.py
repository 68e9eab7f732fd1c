"""How Pulumi waits for the program's Jobs (components/_parts/jobs_await.py): every Job of the dev
stack is awaited a minute past its own deadline, so `up` reports the Job's DeadlineExceeded, and is
replaced on the next `up` when it did not complete, so a failed Job never wedges later `up`s."""

from components._parts.jobs_await import REPLACE_UNREADY, TIMEOUT, job_annotations


def test_a_jobs_annotations_await_it_a_minute_past_its_deadline_and_replace_it_when_unready():
    assert job_annotations(600) == {"pulumi.com/replaceUnready": "true", "pulumi.com/timeoutSeconds": "660"}


def test_every_job_of_the_stack_carries_the_annotations_of_its_own_deadline(dev):
    jobs = dev.of_type("kubernetes:batch/v1:Job")
    assert len(jobs) >= 3
    for job in jobs:
        deadline = int(job.inputs["spec"]["activeDeadlineSeconds"])
        annotations = job.inputs["metadata"]["annotations"]
        assert annotations[REPLACE_UNREADY] == "true", job.name
        assert annotations[TIMEOUT] == str(deadline + 60), job.name
