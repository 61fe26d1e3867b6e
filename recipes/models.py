"""The content-addressed Recipe (docs/recipes.md, "What a recipe is"): one row per distinct
engine + image + scrubbed flags + drafter + context, shared by every benchmark that used it.
`recipes` knows nothing of runs: a benchmark points at its recipe, never the other way round."""

from django.db import models

from recipes.images import offered_image
from recipes.normalise import RecipeSpec


class Recipe(models.Model):
    id = models.CharField(max_length=64, primary_key=True)  # sha256 of the canonical JSON
    engine = models.CharField(max_length=40)
    image = models.CharField(max_length=300, blank=True)
    image_digest = models.CharField(max_length=300, blank=True)
    flags = models.JSONField(default=list)  # scrubbed
    drafter = models.JSONField(null=True, blank=True)  # {method, repo, revision, n}
    context_len = models.PositiveIntegerField(null=True, blank=True)
    first_seen = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recipe {self.id[:12]} ({self.engine})"

    @classmethod
    def from_spec(cls, spec: RecipeSpec, **fields) -> "Recipe":
        return cls(
            id=spec.id,
            engine=spec.engine,
            image=spec.image or "",
            image_digest=spec.image_digest or "",
            flags=list(spec.flags),
            drafter=spec.drafter,
            context_len=spec.context_len,
            **fields,
        )

    def spec(self) -> RecipeSpec:
        return RecipeSpec(
            engine=self.engine,
            image=self.image or None,
            image_digest=self.image_digest or None,
            flags=tuple(self.flags),
            drafter=self.drafter,
            context_len=self.context_len,
        )

    def public_spec(self) -> RecipeSpec:
        """The recipe as offered: an image off the allowlist (and its digest) withheld."""
        image, _ = offered_image(self.image or None)
        return RecipeSpec(
            engine=self.engine,
            image=image,
            image_digest=(self.image_digest or None) if image else None,
            flags=tuple(self.flags),
            drafter=self.drafter,
            context_len=self.context_len,
        )

    def public_json(self) -> dict:
        """The recipe JSON every public surface shows (pods apply it in one click)."""
        image, note = offered_image(self.image or None)
        return {
            "id": self.id,
            "engine": self.engine,
            "image": image,
            "image_digest": (self.image_digest or None) if image else None,
            "image_note": note,
            "flags": list(self.flags),
            "drafter": self.drafter,
            "context_len": self.context_len,
        }
