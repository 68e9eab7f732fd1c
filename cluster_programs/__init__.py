"""Programs that run inside the cluster: the rollout wait (rollout.py, and pool_floor.py for an
autoscaling pool), the accounting registration (accounting_registration.py), both over the API
client incluster.py, and the state-volume guard (state_volume_guard.py). Each reaches the cluster
one way: this package's __init__.py and the modules it runs, in an immutable ConfigMap mounted as
the package at /app/cluster_programs, run as `python3 -m cluster_programs.<module>`
(components/_parts/program_code.py, docs/decisions/in-cluster-programs.md). Standard library only:
they run on a plain Python image (tests/repo/test_layers.py holds that). The node health check
(node_health.py) is the one exception: slurmd runs it as a file (model/builders/node_health.py)."""
