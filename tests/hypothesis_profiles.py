"""The `mutation` hypothesis profile, for `mutmut run` (pyproject.toml [tool.mutmut], docs/testing.md).

mutmut re-runs the tests that reach a mutant under its own tracing, many processes at once: generation is
slower there than any deadline or health check expects. Derandomized, so a mutant is killed or survives
the same way on every run, and with fewer examples so that a whole run takes minutes.

Registered by the conftest of each folder mutmut's tests come from (tests/unit, tests/spark): a run of one
mutant loads only the conftests of the tests that reach it.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "mutation", max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
