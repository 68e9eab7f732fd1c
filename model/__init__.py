"""The facts the program is built from, with no Pulumi imports: the cluster contract every
component and tool agrees on (contract.py), the instance catalog (catalog.py) and the GPU pools'
schema and rules (gpu_pools.py). Components and tools import these, never each other's constants."""
