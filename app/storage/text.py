"""Text PostgreSQL accepts: a message's bytes may carry NUL or lone surrogates, which a text column refuses."""


def storable(text: str, limit: int) -> str:
    """No NUL, no lone surrogates, at most `limit` characters."""
    safe = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return safe[:limit]
