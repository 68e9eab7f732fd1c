"""Building blocks that only components use (Helm releases and their reviewed values, Pod Identity
roles, Job await annotations and Job identities, the load balancer controller's IAM policy); nothing outside
components/ imports them."""
