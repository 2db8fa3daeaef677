"""A list of tags that Enter adds in JupyterLab: the :class:`TagEntry`.

ipywidgets' ``TagsInput`` adds a tag on Enter in its own key handler, which
JupyterLab's notebook key handling pre-empts inside a cell, so the tag only
appears after Tab or a click elsewhere. A plain ``Text`` with
``continuous_update=False`` sends its value on Enter (the input's ``change``
event) in JupyterLab too, so :class:`TagEntry` takes new tags from such a box
(a ``Combobox``, for suggestions) or its Add button, checks each one and says
why it refused one. The ``TagsInput`` above it shows the tags and removes them.

The box is cleared by the kernel once it has taken the tag: what is typed
into it before that reply arrives is overwritten (no stock widget clears an
input in the browser alone).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w


class TagEntry(w.VBox):  # type: ignore[misc]
    """Tags (``tags``) added from ``entry`` by Enter or ``add_button``; ``note`` says why not.

    Args:
        check: Returns why a tag is refused (unknown field, wrong type), or ``None``.
        resolve: Turns the typed or picked text into the tag (e.g. a label
            into a field name); strips it by default.
        options: Suggestions for the entry box (not enforced).
        allowed: The only tags ``tags`` takes, when not empty.
        placeholder: The entry box's hint.
        empty: A quiet text shown instead of the tags while there is none
            (an empty ``TagsInput`` draws as an empty square, so it is hidden).
    """

    def __init__(
        self,
        *,
        check: Callable[[str], str | None],
        resolve: Callable[[str], str] = str.strip,
        options: Sequence[str] = (),
        allowed: Sequence[str] = (),
        placeholder: str = "type, then Enter",
        empty: str = "",
    ) -> None:
        self._check, self._resolve = check, resolve
        self.tags = w.TagsInput(
            value=[], allowed_tags=list(allowed), allow_duplicates=False, placeholder="\u200b"
        ).add_class("sn-tags")
        self.entry = w.Combobox(
            options=tuple(options),
            ensure_option=False,
            continuous_update=False,
            placeholder=placeholder,
            layout=w.Layout(width="auto", flex="1 1 auto"),
        ).add_class("sn-tag-input")
        self.add_button = w.Button(
            description="Add",
            icon="plus",
            tooltip="add what is typed (Enter does too)",
            layout=w.Layout(width="5em"),
        ).add_class("sn-tag-add")
        self.note = w.HTML().add_class("sn-tag-error")
        self.empty = w.HTML(
            f'<span style="font-size:12px;color:#888">{html.escape(empty)}</span>'
        ).add_class("sn-tags-empty")
        self._empty_text = empty
        self.entry.observe(self._entered, "value")
        self.tags.observe(self._show_tags, "value")
        self.add_button.on_click(lambda _: self.submit())
        super().__init__(
            children=(self.tags, self.empty, w.HBox((self.entry, self.add_button)), self.note),
            layout=w.Layout(width="100%"),
        )
        self.add_class("sn-tag-box")
        self._show_tags()

    def _show_tags(self, _: Any = None) -> None:
        has_tags = bool(self.tags.value)
        self.tags.layout.display = "" if has_tags else "none"
        self.empty.layout.display = "none" if has_tags or not self._empty_text else ""

    @property
    def value(self) -> list[str]:
        """The tags."""
        return list(self.tags.value)

    @value.setter
    def value(self, tags: Sequence[str]) -> None:
        self.tags.value = list(tags)

    def _entered(self, change: dict[str, Any]) -> None:
        # Clearing the box after a tag was added comes back here with "".
        if change["new"].strip():
            self.submit()

    def submit(self) -> bool:
        """Add what the entry box holds; return whether a tag was added.

        An empty box adds nothing and says nothing (the Add button's click
        follows the box's own Enter or blur, which may have added it already).
        """
        text = self.entry.value
        if not text.strip():
            return False
        tag = self._resolve(text)
        problem = self._check(tag)
        if problem is None and tag in self.tags.value:
            problem = f"{tag!r} is already in the list"
        if problem is not None:
            self.note.value = (
                f'<span style="color:#b00020">&#9888; not added: {html.escape(problem)}</span>'
            )
            return False
        self.note.value = ""
        self.tags.value = [*self.tags.value, tag]
        self.entry.value = ""
        return True
