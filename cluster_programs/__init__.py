"""Programs that run inside the cluster, shipped by components into ConfigMaps and commands: the
rollout wait (rollout.py, over the API client incluster.py) and the state-volume guard. Standard
library only: they run on a plain Python image (tests/unit/cluster_programs holds that)."""
