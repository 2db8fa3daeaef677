"""Griffe extension: a default that names a module constant shows its value.

``lookahead: int = DEFAULT_LOOKAHEAD`` tells a reader of the site nothing; the
signature reads ``lookahead: int = 2`` instead. A bare name (a parameter's
default or a dataclass field's) that resolves to a module-level attribute with
a value is replaced; anything else (a call, an attribute of an object, a name
Griffe cannot resolve) is left as written. For the site only: the code keeps
its names.
"""

from __future__ import annotations

from typing import Any

import griffe


def _value(default: object) -> object | None:
    """The value of the constant ``default`` names, or None."""
    if not isinstance(default, griffe.ExprName):
        return None
    try:
        target = default.parent.modules_collection[default.canonical_path]  # type: ignore[union-attr]
    except (KeyError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if isinstance(target, griffe.Alias):
        try:
            target = target.final_target
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    if not isinstance(target, griffe.Attribute) or target.value is None:
        return None
    return target.value


def _resolve(obj: griffe.Object) -> None:
    if isinstance(obj, griffe.Function):
        for param in obj.parameters:
            value = _value(param.default)
            if value is not None:
                param.default = value  # type: ignore[assignment]
    elif isinstance(obj, griffe.Attribute) and obj.parent is not None and obj.parent.is_class:
        # A dataclass's fields: their values are its ``__init__`` defaults.
        value = _value(obj.value)
        if value is not None:
            obj.value = value  # type: ignore[assignment]
    for member in obj.members.values():
        if not member.is_alias and isinstance(member, griffe.Object):
            _resolve(member)


class ResolvedDefaults(griffe.Extension):
    """Replace constant names in parameter defaults with the constants' values."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the defaults of every function in the package once it is loaded.

        Args:
            pkg: The package just loaded.
            **kwargs: The hook's other arguments, unused.
        """
        _resolve(pkg)
