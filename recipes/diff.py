"""Recipe diffs (docs/recipes.md, "Diffs"): which flags one recipe adds, removes and changes
against another, and which of its other parts (engine, image, drafter, context) differ — the
one-flag changes the recipe lab lives by."""

from __future__ import annotations

from collections.abc import Iterable

from recipes.argv import read_argv

FIELDS = ("engine", "image", "image_digest", "drafter", "context_len")


def flag_map(flags: Iterable[str]) -> dict[str, str | None]:
    """Option → value (None for a switch); a repeated option keeps its values joined by a newline
    so `--x a --x b` differs from `--x b`."""
    options: dict[str, list[str | None]] = {}
    for arg in read_argv(list(flags)):
        if arg.is_option:
            options.setdefault(arg.name, []).append(arg.value)
    return {
        name: values[0] if len(values) == 1 else "\n".join(str(v) for v in values)
        for name, values in options.items()
    }


def diff_flags(base: Iterable[str], other: Iterable[str]) -> dict:
    """What `other` adds, removes and changes against `base`, options in the order they appear."""
    before, after = flag_map(base), flag_map(other)
    return {
        "added": [
            {"flag": name, "value": value} for name, value in after.items() if name not in before
        ],
        "removed": [
            {"flag": name, "value": value} for name, value in before.items() if name not in after
        ],
        "changed": [
            {"flag": name, "from": before[name], "to": value}
            for name, value in after.items()
            if name in before and before[name] != value
        ],
    }


def diff_recipes(base, other) -> dict:
    """The diff of two recipes (anything with the fields of `recipes.normalise.RecipeSpec`, such
    as a `Recipe` row): flags added/removed/changed, plus the other fields that differ."""
    diff = diff_flags(base.flags, other.flags)
    diff["fields"] = [
        {"field": name, "from": getattr(base, name), "to": getattr(other, name)}
        for name in FIELDS
        if getattr(base, name) != getattr(other, name)
    ]
    diff["identical"] = not any(diff[key] for key in ("added", "removed", "changed", "fields"))
    return diff
