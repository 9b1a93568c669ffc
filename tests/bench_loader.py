"""bench/ holds scripts, not a package: the load and fault tests import bench/load_test.py by path."""
import importlib.util
from pathlib import Path

LOAD_TEST = Path(__file__).resolve().parent.parent / "bench" / "load_test.py"


def load_bench():
    """bench/load_test.py as a module (its `run` drives gunicorn with simulated annotators)."""
    spec = importlib.util.spec_from_file_location("humeval_load_test", LOAD_TEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
