"""The champion answers' shapes, defined once (docs/champions.md §The champion API, §The champion
recipes pods fetch): the recompute builds these models (board/crowns.py), the read models store
their JSON (`Champion.summary`, `Champion.pod_recipe`), the APIs render them (board/api.py) and
/api/schema/ describes them from the same classes (drf-spectacular reads pydantic models).

Every model forbids keys it does not declare, so a key the builder adds without declaring it
fails the recompute instead of reaching pods undocumented. Numbers declared `float` are floats
in the JSON (`816.0`), whatever the builder passed.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import MISSING, BaseModel, ConfigDict, Field, WithJsonSchema

from board.champions import Axis
from board.serializers.recipes import RECIPE_JSON_SCHEMA

__all__ = [
    "ChampionList",
    "Crown",
    "CrownHolder",
    "CrownRecord",
    "CrownHardwareClass",
    "NotOneClick",
    "PeakCell",
    "PodChampionList",
    "PodChampionRecipe",
    "PodDrafter",
    "PodsOffered",
    "Reign",
    "Reproductions",
    "Spread",
]


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def as_json(self) -> dict:
        """The JSON the read models store and the APIs answer."""
        return self.model_dump(mode="json")


# The recipe's public JSON is Recipe.public_json(), shared with the recipe API (docs/recipes.md).
RecipeJson = Annotated[
    dict[str, Any] | None, WithJsonSchema(RECIPE_JSON_SCHEMA | {"nullable": True})
]


class CrownHardwareClass(Shape):
    slug: str
    name: str


class Spread(Shape):
    min: float
    max: float
    relative: float = Field(description="(max − min) ÷ max")


class Reproductions(Shape):
    pods: int = Field(description="distinct pods that measured this recipe here")
    benchmark_ids: list[str]
    spread: Spread | None
    summary: str = Field(description="e.g. 'reproduced by 2 pods, spread 1.8 %'")


class NotOneClick(Shape):
    """Why a recipe is not one-click (docs/recipes.md §The serve-flag policy)."""

    code: str
    flag: str | None
    message: str


class PodsOffered(Shape):
    """The pods' entry for a model's throughput crown: whose recipe pods of the class get."""

    benchmark_id: str
    recipe_id: str
    value: float


class CrownRecord(Shape):
    """The crown as the recompute writes it (`Champion.summary`); the pages' crown cards read it
    too. A model's throughput crown also carries `pods_offered` (null when pods get none); no
    other crown has the key."""

    value: float
    unit: str
    cohort: str | None = Field(description="e.g. 'coding @ c64'")
    tpot_ms: float | None = Field(description="latency: TPOT p50 beside TTFT")
    model: str
    benchmark_id: str
    composite: float | None
    since: datetime
    recipe_id: str | None
    recipe: RecipeJson
    roofline_pct: float | None = Field(
        description="how much of its bandwidth bound the holder's single stream uses (%)"
    )
    reproductions: Reproductions
    one_click: bool
    one_click_reasons: list[NotOneClick] = Field(description="empty when one-click")
    pods_offered: PodsOffered | None | MISSING = MISSING


class Reign(Shape):
    """One line of a crown's history."""

    benchmark_id: str
    model: str
    value: float
    cohort: str | None
    tpot_ms: float | None
    since: datetime
    until: datetime | None
    dethroned_by: str | None


class Crown(CrownRecord):
    """The holder of one crown as `/api/v1/champions` answers it: an axis on a hardware class
    (or on one model there), with its history oldest first."""

    hardware_class: CrownHardwareClass
    axis: Axis
    crown: Literal["class", "model"]
    history: list[Reign]


class ChampionList(Shape):
    champions: list[Crown]


class PeakCell(Shape):
    category: str
    conc: int


class PodDrafter(Shape):
    method: str | None
    repo: str | None
    revision: str | None
    n: int | None
    uses_drafter: bool


class CrownHolder(Shape):
    """The crown holder when pods are handed another benchmark's recipe, and why."""

    benchmark_id: str
    peak_agg_tps: float
    not_offered_because: list[NotOneClick]


class PodChampionRecipe(Shape):
    """One entry of the pods' champion list (`Champion.pod_recipe`). The pod reads the fields
    down to `started_at`; `benchmark_id` and `crown_holder` are the board's own."""

    hardware: str = Field(description="the champion's raw hardware label")
    hw_bucket: str = Field(description="the hardware class name")
    model: str
    canonical: str
    hf_repo: str | None
    hf_revision: str | None
    engine: str | None
    image: str | None
    serve_flags: list[str]
    spec_decode: str | None
    drafter: PodDrafter | None
    peak_agg_tps: float
    peak_agg_cell: PeakCell | None
    quality: float | None
    quality_run: str | None
    trust_tier: str
    run: str | None
    started_at: int | None = Field(description="epoch seconds")
    benchmark_id: str
    crown_holder: CrownHolder | None


class PodChampionList(Shape):
    hardwares: list[str]
    champions: list[PodChampionRecipe]
