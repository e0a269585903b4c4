"""minigrad.gpu's reading order (its __init__ docstring) stays true, with the checks every stage uses."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_stage_reading_order", Path(__file__).parents[1] / "test_reading_order.py")
_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_checks)


def test_every_gpu_module_is_listed_once_and_exists():
    _checks.test_every_module_is_listed_once_and_every_listed_file_exists("minigrad.gpu")


def test_stated_gpu_file_sizes_match():
    _checks.test_stated_sizes_match_the_files("minigrad.gpu")
