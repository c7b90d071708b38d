"""The `mutation` hypothesis profile (tests/hypothesis_profiles.py), for `mutmut run`."""

import tests.hypothesis_profiles  # noqa: F401  (registers the profile)
