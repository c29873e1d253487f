"""Escaping text so it can sit in one field of a comma-separated line."""


def quote(text: str) -> str:
    """Put a backslash before every backslash and every comma."""
    return text.replace("\\", "\\\\").replace(",", "\\,")


def unquote(text: str) -> str:
    """The inverse of quote(): unquote(quote(text)) == text for every text."""
    out = []
    escaped = False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)
