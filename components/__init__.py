"""slinky-eks components: one ComponentResource per concern (type tokens slinky-eks:<module>:<Type>)."""
