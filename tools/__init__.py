"""Day-two tools: verify the cluster from the stack outputs, resume stuck nodes, turn job output
into reports, and plan the resource graph offline."""
