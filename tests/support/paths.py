"""Where the tests find the repository and their data."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
