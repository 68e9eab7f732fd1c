"""The stack's outputs, declared once (model/facts/outputs.py). tests/graph/test_outputs.py holds the
dev stack's exports to this table."""

from model.facts.outputs import OUTPUTS, Output, export_differences

TABLE = (Output("clusterName", "the cluster"), Output("region", "the region"))


def test_exports_equal_to_the_table_differ_in_nothing():
    assert export_differences({"clusterName", "region"}, TABLE) == []


def test_each_difference_is_one_line_naming_the_output_and_which_side_lacks_it():
    assert export_differences({"clusterName", "vpcId"}, TABLE) == [
        "exported, not in model/facts/outputs.py: vpcId",
        "in model/facts/outputs.py, not exported: region",
    ]


def test_every_output_is_declared_once_with_a_description():
    names = [o.name for o in OUTPUTS]
    assert len(names) == len(set(names))
    assert all(o.description.strip() for o in OUTPUTS)
