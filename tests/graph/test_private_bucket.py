"""A private bucket: every public access setting blocked on it, emptied and deleted on destroy."""

import pulumi

from components._parts.private_bucket import private_bucket
from devkit.offline_run import run_function

BLOCKS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _graph():
    return run_function(lambda: private_bucket("logs", "logs-private", pulumi.ResourceOptions()))


def test_every_public_access_setting_is_blocked_on_that_bucket():
    graph = _graph()
    block = graph.named("logs-private")
    assert [block.inputs[k] for k in BLOCKS] == [True] * 4
    assert graph.depends_on(block, graph.named("logs"))


def test_the_bucket_is_emptied_and_deleted_on_destroy():
    assert _graph().named("logs").inputs["forceDestroy"] is True


def test_the_stacks_buckets_are_private_buckets(dev):
    for bucket in ("slurmd-sources",):
        (block,) = [
            b
            for b in dev.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
            if dev.depends_on(b, dev.named(bucket))
        ]
        assert [block.inputs[k] for k in BLOCKS] == [True] * 4
