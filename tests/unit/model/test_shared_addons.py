"""The shared add-ons: every one in the stack's own cluster, only the listed ones in an existing
cluster, and each says what the stack needs of the cluster's own."""

from model.facts import shared_addons


def test_the_stacks_own_cluster_gets_every_shared_addon():
    assert shared_addons.installed("", []) == frozenset(shared_addons.KEYS)


def test_an_existing_cluster_gets_none_unless_listed():
    assert shared_addons.installed("platform", []) == frozenset()
    assert shared_addons.installed("platform", ["certManager"]) == {"certManager"}


def test_each_addon_says_what_it_needs_and_where_it_fails():
    assert all(a.needs.strip() and a.fails.strip() for a in shared_addons.ALL)
    assert len(set(shared_addons.KEYS)) == len(shared_addons.ALL)


def test_the_scalers_an_autoscaling_pool_needs_are_shared_addons():
    assert set(shared_addons.FOR_AUTOSCALING) <= set(shared_addons.KEYS)
