"""A filter that names a value nobody knows is a mistake, not an empty answer: the error names the value,
the closest known ones ("did you mean") and what is accepted."""

import difflib
from collections.abc import Sequence

from app.errors import UsageError

SHOWN = 20  # known values listed in the message; the rest are counted


def unknown_value(option: str, value: str, known: Sequence[str], what: str) -> UsageError:
    """`option` as the caller spells it (`--reason` or `reason`), `what` names the kind (a dead-letter reason)."""
    close = difflib.get_close_matches(value, known, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    listed = ", ".join(known[:SHOWN]) + (f" and {len(known) - SHOWN} more" if len(known) > SHOWN else "")
    accepted = f" Known: {listed}." if known else " None is known yet."
    return UsageError(f"{option} {value!r} is not {what}{hint}{accepted}")
