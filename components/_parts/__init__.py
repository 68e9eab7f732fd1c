"""Building blocks that only components use (Helm releases and their reviewed values, Pod Identity
roles, Job await annotations, Job identities, the in-cluster programs' code ConfigMaps, the load
balancer controller's IAM policy, the in-region image build's run); nothing outside components/
imports them. The values and pod specs the components write are built in model/builders/."""
