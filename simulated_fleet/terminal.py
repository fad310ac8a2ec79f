"""Text a terminal would act on rather than show, and that text written out.

Names, tools and descriptions from scenario files, policy messages and labels reach
terminals, pages and files.  A control character in them (``ESC``, which starts every
escape sequence, the other C0 and C1 controls, ``DEL``) or a bidirectional override can
clear the screen, set the window title, hide or reorder what follows.  Scenario models
refuse such text (:mod:`fleetchaos.sim.fault_specs`); every writer writes it out
(:mod:`fleetchaos.escaping`).  The standard library only.
"""

from __future__ import annotations

import re

__all__ = ["UNSAFE_FOR_TERMINALS", "terminal_text"]

#: C0 controls but tab and line feed, DEL, C1 controls (``\x9b`` is a one-byte ESC-[), and the bidirectional
#: embeddings, overrides and isolates.
UNSAFE_FOR_TERMINALS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _written_out(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` with every character a terminal would act on written out (``\\x1b[2J`` shows as ``\\\\x1b[2J``)."""
    return UNSAFE_FOR_TERMINALS.sub(_written_out, text)
