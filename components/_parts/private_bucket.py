"""A bucket of the stack's that nothing outside the account can reach: every public access
setting blocked, emptied and deleted on destroy (teardown leaves nothing behind). What it holds,
how long and who may write it stay with the component that owns it."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws


def private_bucket(bucket_name: str, block_name: str, opts: pulumi.ResourceOptions) -> aws.s3.Bucket:
    """The bucket `bucket_name` and its public access block `block_name` (Amazon S3 User Guide,
    "Blocking public access to your Amazon S3 storage":
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html)."""
    bucket = aws.s3.Bucket(bucket_name, force_destroy=True, opts=opts)
    aws.s3.BucketPublicAccessBlock(
        block_name,
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=opts,
    )
    return bucket
