"""Reading the text format back: one "name value" pair a line."""

from __future__ import annotations


def parse_line(line: str) -> tuple[str, int]:
    parts = line.split()
    if len(parts) != 2 or not parts[0].isidentifier():
        raise ValueError(f"malformed metric line: {line!r}")
    return parts[0], int(parts[1])


def parse_text(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            name, value = parse_line(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from None
        values[name] = value
    return values
