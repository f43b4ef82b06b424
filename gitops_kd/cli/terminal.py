"""Text safe to print on a terminal: control characters (escape sequences among them) shown as visible escapes."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidirectional overrides and isolates (which
# reorder what a terminal shows)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile(r"[\t\n]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character as ``\\xNN`` (``\\uNNNN``): an ESC in a file name or a message cannot
    move the cursor, recolour or hide what follows. ``one_line`` escapes tab and newline too (a file name)."""
    text = _CONTROL.sub(_escaped, text)
    return _LINE_BREAK.sub(_escaped, text) if one_line else text
