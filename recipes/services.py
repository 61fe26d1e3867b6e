"""Writes of the recipe registry: the Recipe a run used, created on first sight."""

from datetime import datetime

from recipes.models import Recipe
from recipes.normalise import RecipeSpec


def recipe_of(spec: RecipeSpec | None, *, seen_at: datetime | None = None) -> Recipe | None:
    """The shared Recipe row of a normalised recipe, created on first sight."""
    if spec is None:
        return None
    recipe, _ = Recipe.objects.get_or_create(
        id=spec.id, defaults=_fields(Recipe.from_spec(spec, first_seen=seen_at))
    )
    return recipe


def _fields(recipe: Recipe) -> dict:
    return {
        field.attname: getattr(recipe, field.attname)
        for field in Recipe._meta.concrete_fields
        if field.attname != "id"
    }
