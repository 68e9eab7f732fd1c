"""The development kit: the program run under mocks (offline_run, offline_account), the offline
plan, the chart render, the reference data and the benchmarks. Tests and reviewers use it; the
program and the operator's tools never do."""
