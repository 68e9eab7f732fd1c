"""The facts the program is built from, with no Pulumi imports: the cluster contract every
component and tool agrees on (contract.py), the instance catalog (catalog.py), every version pin
(versions.py), EKS's version calendar (eks_versions.py) and the support calendar of the other pins
(support_calendar.py), image reference grammar
(image_references.py), the GPU pools' schema and rules (gpu_pools.py), the config schema
(config_schema.py) with its small rules (rules.py), which return problems with a level
(problems.py), and the builders of what the cluster is given: the Slurm release's values
(slurm_values.py) and each pool's cluster.env (job_environment.py); and the preflight's rules over
what the account answers (preflight.py). Components and tools import these, never each other's
constants."""
