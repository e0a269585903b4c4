"""Hypothesis profiles for the whole suite.

- ``ci`` (always the default, on a laptop as in CI): derandomized, so every
  run draws the same examples and a red run is a real defect, never bad luck;
  no deadline (shared machines are slow at random moments); a failure prints
  the blob that replays it.
- ``wide`` (on demand): random examples, many more of them, to hunt for
  bugs the fixed examples miss: ``pytest --hypothesis-profile=wide`` or
  ``MINIGRAD_HYPOTHESIS_PROFILE=wide pytest``. A failure found this way becomes
  an ``@example`` or a fixed strategy, so ``ci`` keeps checking it.

Tests leave ``max_examples`` and ``deadline`` to the profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 60
WIDE_EXAMPLES = 1000

settings.register_profile(
    "ci", max_examples=CI_EXAMPLES, derandomize=True, deadline=None, print_blob=True, database=None,
)
settings.register_profile(
    "wide", max_examples=WIDE_EXAMPLES, derandomize=False, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# ``--hypothesis-profile`` (read later, by Hypothesis's pytest plugin) overrides this.
settings.load_profile(os.environ.get("MINIGRAD_HYPOTHESIS_PROFILE", "ci"))
