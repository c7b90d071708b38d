"""Reading a process's /metrics text (the Prometheus exposition format) in tests."""

import re


def sample(metrics: str, name: str, **labels: str) -> float | None:
    """The value of `name` with exactly these labels (in any order), or None when the series is not exposed."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    match = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", metrics, re.MULTILINE)
    return float(match.group(1)) if match else None
