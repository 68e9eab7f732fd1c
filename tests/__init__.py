"""The tests, a package by layer (docs/architecture.md, the tests table): helpers are imported as
`tests.support.<module>`."""
