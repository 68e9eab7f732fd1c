"""The account's answers read from pulumi-aws's data sources: an error that means "nothing of
that id" is told from any other, in the provider's older and newer wording."""

import pytest

from stack.account import _NOTHING_FOUND


@pytest.mark.parametrize(
    "message",
    [
        "no matching EC2 VPC found",
        "no matching EC2 Subnet found",
        "no matching Route Table found",
        "query returned no results. Please change your search criteria and try again",
    ],
)
def test_nothing_found_is_told_in_either_wording(message):
    assert _NOTHING_FOUND.search(message)


def test_another_error_is_not_nothing_found():
    assert not _NOTHING_FOUND.search("UnauthorizedOperation: You are not authorized")
