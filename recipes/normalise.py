"""Reading the facts a board needs out of a pod's recipe."""

CONTEXT_FLAGS = ("--max-model-len", "--context-length", "--ctx-size", "-c")
CONTEXT_FLOOR = 65536


def flag_value(flags: list | None, names: tuple[str, ...]) -> str | None:
    """The value of the last of `names` in an argv list (`--x 1` or `--x=1`)."""
    value = None
    items = [str(item) for item in flags or []]
    for index, item in enumerate(items):
        name, sep, inline = item.partition("=")
        if name in names:
            if sep:
                value = inline
            elif index + 1 < len(items):
                value = items[index + 1]
    return value


def context_len_of(recipe: dict | None) -> int | None:
    """Served context: the context flag in `flags` (or the argv `command`), else `context_len`."""
    recipe = recipe if isinstance(recipe, dict) else {}
    for argv in (recipe.get("flags"), recipe.get("command")):
        if isinstance(argv, list):
            value = flag_value(argv, CONTEXT_FLAGS)
            if value is not None:
                try:
                    return int(float(value))
                except ValueError:
                    return None
    declared = recipe.get("context_len")
    if isinstance(declared, int | float) and not isinstance(declared, bool):
        return int(declared)
    return None
