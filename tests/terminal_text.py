"""What no terminal output may hold: the characters a terminal obeys or reorders text by."""

RAW = {chr(c) for c in (*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0))} | {
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"}


def raw_controls(text: str) -> set[str]:
    """The raw control, C1 and bidi characters in `text` (newline and tab are allowed)."""
    return {c for c in text if c in RAW}
