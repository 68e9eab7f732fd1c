"""slinky-eks components: one ComponentResource per concern.

Type tokens
-----------
Every component registers as ``slinky-eks:<module>:<Type>``: <Type> is the class name, and
<module> is the concern group the component belongs to (not its Python module), one of:

- `network`: the VPC, its subnets and routes (Network)
- `cluster`: the EKS control plane and the Kubernetes provider (Cluster)
- `nodes`: the node groups (NodeGroups)
- `devices`: what makes GPU nodes advertise their devices (DevicePlugins)
- `ingress`: traffic from outside into the cluster (LoadBalancerController)
- `storage`: volumes, their drivers and the slurm namespace that holds the claims (SharedStorage)
- `image`: the slurmd image, its build and its pull onto the nodes (SlurmdImage, ImagePrePull)
- `slinky`: the Slinky operator and what it needs (SlinkyOperator)
- `slurm`: the Slurm cluster on top and its named users (SlurmCluster, StateVolumeGuard, SlurmReadiness,
  UserIdentities), and the whole layer above a cluster as one component (SlurmLayer)
- `jobs`: what users run, staged onto /shared (JobStaging)
- `scaling`: what sizes the autoscaling GPU pools to their partitions' queues (ClusterAutoscaler,
  PoolAutoscaling)
- `accounting`: Slurm's accounting records and the database that keeps them (AccountingDatabase,
  AccountingRegistration)
- `metrics`: metrics, their store, alerts and dashboards (MetricsStore, DcgmExporter, Grafana)
- `index`: what Pulumi's Python component provider serves to programs in other languages, in the
  one module it serves (SlurmOnEks; docs/decisions/slurm-layer-component.md)

A token is part of every URN under it: renaming a group or a class replaces resources, so a new
component joins an existing group where one fits (tests/repo/test_component_conventions.py).

What to wait for
----------------
One vocabulary, in both directions:

- An args field that only orders work is ``depends_on: Sequence[pulumi.Resource]`` (what the
  component's resources wait for, and are deleted before), or ``<part>_depends_on`` where one part
  of the component waits for more than the rest (``SlurmClusterArgs.release_depends_on``). Each
  field's comment says which children it orders.
- A component exposes what others may wait for as ``ready: list[pulumi.Resource]``, or
  ``<part>_ready`` where dependents wait for different parts (``NodeGroups.core_ready`` and
  ``gpu_ready``; ``SharedStorage.namespace_ready``). Wiring passes these lists, never a child.
- ``namespace`` in args is always the namespace's name (a str); the Namespace object is waited for
  through ``SharedStorage.namespace_ready``.
- The EKS cluster arrives as one args field, ``cluster: ClusterContext`` (components/cluster.py):
  its name, region, account, Kubernetes provider and security group, and ``pod_identity_ready``,
  what a Pod Identity association waits for besides the component's own ``depends_on``.
"""
