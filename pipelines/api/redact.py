"""Every spelling of a key that must never leave memory.

Used three times: the client scrubs the server's problem details (a server that echoes the key,
or a long slice of it, in an error must not make us print, raise or log it), the audit's scanner
looks for these spellings in files, and the audit scrubs every outside text before it enters its
report.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

# Shorter encoded fragments would match unrelated text too often to be evidence of a key.
MIN_NEEDLE_CHARS = 8
REDACTED = "[redacted]"
_PERCENT = re.compile(r"%[0-9A-F]{2}")


@dataclass(frozen=True)
class Needle:
    """One spelling of a key: the bytes to look for and the encoding's name."""

    encoding: str
    value: bytes

    def __repr__(self) -> str:  # the value is a key or encodes one
        return f"Needle(encoding={self.encoding!r}, value=<{len(self.value)} bytes>)"


def needles(key: str) -> list[Needle]:
    """The raw key, its URL-encoded forms and its base64 forms at the three alignments.

    A key inside a longer base64 blob (a basic-auth header, a Kubernetes secret, a JSON
    document encoded whole) starts at any byte offset modulo 3; each offset gives different
    characters, of which only those depending on key bytes alone are kept.
    """
    raw = key.encode("utf-8")
    found: dict[bytes, str] = {raw: "plain"}
    for value in (quote(key, safe=""), _lower_hex(quote(key, safe=""))):
        found.setdefault(value.encode("ascii"), "url")
    for alignment in range(3):
        for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
            core = _aligned_core(raw, alignment, encode)
            if len(core) >= MIN_NEEDLE_CHARS:
                found.setdefault(core, name)
    return [Needle(encoding, value) for value, encoding in found.items()]


def _aligned_core(raw: bytes, alignment: int, encode: Callable[[bytes], bytes]) -> bytes:
    encoded = encode(b"\0" * alignment + raw)
    start = -(-alignment * 8 // 6)  # first character free of the prefix's bits
    end = (alignment + len(raw)) * 8 // 6  # last character made of key bits only
    return encoded[start:end]


def _lower_hex(text: str) -> str:
    """Some encoders write percent escapes in lowercase (%2f); both spellings are searched."""
    return _PERCENT.sub(lambda m: m.group(0).lower(), text)


class Redactor:
    """Scrubs every spelling of the audited keys from text we did not write ourselves.

    Whole spellings first, then any run of ``MIN_NEEDLE_CHARS`` or more consecutive characters
    of one: a server that echoes the key minus its last characters (or any long slice of it)
    would otherwise have us print most of it, which is as good as the key to a guesser.
    """

    def __init__(self, keys: list[str] | None = None) -> None:
        self._values: list[str] = []
        self._pieces: set[str] = set()
        self._pieces_at: re.Pattern[str] | None = None
        for key in keys or []:
            self.add(key)

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._values)} spellings>)"

    def add(self, key: str) -> None:
        if not key:
            return
        for needle in needles(key):
            text = needle.value.decode("utf-8", errors="ignore")
            if text and text not in self._values:
                self._values.append(text)
            self._pieces.update(_pieces(text))
        # Longest first, so a spelling containing another is replaced whole.
        self._values.sort(key=len, reverse=True)
        if self._pieces:
            # A lookahead matches at every position where a piece starts, overlaps included.
            alternatives = "|".join(map(re.escape, sorted(self._pieces)))
            self._pieces_at = re.compile(f"(?=(?:{alternatives}))")

    def scrub(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return self._scrub_runs(text)

    def _scrub_runs(self, text: str) -> str:
        """Each stretch of text covered by pieces of a spelling, overlapping or adjacent pieces
        merged, becomes one REDACTED."""
        if self._pieces_at is None:
            return text
        spans: list[list[int]] = []
        for match in self._pieces_at.finditer(text):
            start, end = match.start(), match.start() + MIN_NEEDLE_CHARS
            if spans and start <= spans[-1][1]:
                spans[-1][1] = end
            else:
                spans.append([start, end])
        for start, end in reversed(spans):
            text = text[:start] + REDACTED + text[end:]
        return text


def _pieces(spelling: str) -> set[str]:
    """Every run of exactly MIN_NEEDLE_CHARS characters of a spelling: any longer run of it is
    a chain of these."""
    size = MIN_NEEDLE_CHARS
    return {spelling[i : i + size] for i in range(len(spelling) - size + 1)}
