"""jobs/lib/nccl_tests.py as a module: the jobs run it as a script beside their other files in
/shared/jobs/lib, so it is no package; loaded from its path."""

import importlib.util
import sys

from tests.support.paths import REPO

PATH = REPO / "jobs" / "lib" / "nccl_tests.py"


def _load():
    spec = importlib.util.spec_from_file_location("nccl_tests", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nccl_tests", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return sys.modules["nccl_tests"]


nccl_tests = _load()
