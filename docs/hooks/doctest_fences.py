"""Griffe extension: docstrings written for ``help()`` and doctest, read as Markdown.

The docstrings keep their examples as bare ``>>>`` blocks, which ``help()``
and doctest read as they are; Markdown would read them as nested quotes, and
brackets in their output as links. This wraps each block in a ``pycon`` fence
and drops the ``# doctest:`` directives. Sphinx roles (``:func:`~a.b` ``)
become inline code, as ``help()`` shows them without the role. For the site
only: the docstrings themselves are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_DIRECTIVE = re.compile(r"\s*# doctest:.*$")
_ROLE = re.compile(r":(?:func|meth|class|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match[2]
    return f"`{target.rsplit('.', 1)[-1] if match[1] else target}`"


def fence_doctests(text: str) -> str:
    """Wrap every run of doctest lines in ``text`` in a fenced code block.

    A block starts at a ``>>>`` line and runs, at the same indentation, to the
    next blank line or a line indented less.

    Args:
        text: A docstring, already dedented.

    Returns:
        The docstring with its doctest blocks fenced.
    """
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if not stripped.startswith(">>>"):
            out.append(_ROLE.sub(_role, line))
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        # A blank line splits the fence from a paragraph before it, but would
        # cut a section (``Example:``) from its indented body.
        if out and out[-1].strip() and out[-1].startswith(indent) and out[-1][len(indent)] != " ":
            out.append("")
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            out.append(_DIRECTIVE.sub("", lines[i]))
            i += 1
        out.append(f"{indent}```")
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctests of every docstring Griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring as it is loaded.

        Args:
            obj: The module, class, function or attribute just loaded.
            **kwargs: The hook's other arguments, unused.
        """
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
