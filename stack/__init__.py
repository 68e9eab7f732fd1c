"""What the program reads before it declares a resource: the stack's configuration (config.py) and
the answers of the AWS account it deploys into (account.py)."""
