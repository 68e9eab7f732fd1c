"""The model the program is built from, pure (no Pulumi imports), in three rooms by role: facts/
(the cluster contract, the instance catalog, every version pin and the calendars that date them,
image references, subnet slots, audit logs, reserved capacity, prices, the stack's outputs),
checks/ (the config schema and its rules, which return problems with a level; the GPU pools' and
the users' schemas; the preflight over what the account answers) and builders/ (every chart's
values, every pod spec and every file the program writes into the cluster). Components and tools
import these, never each other's constants."""
