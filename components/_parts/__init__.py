"""Building blocks that only components use (Helm releases and their reviewed values, Pod Identity
roles, Job await annotations, Job identities, in-cluster program pods and the shared-volume writer Jobs, the load balancer controller's IAM policy); nothing outside
components/ imports them."""
