"""The demo's catalogue, read from the data files beside this module (`data/models.json`,
`data/suites.json`; their fields are described in `data/README.md`).

A demo model is one model + recipe line on one hardware, with the figures its demo job should
show; a demo job is one such line submitted by one named demo pod at one start time. The load
order of the jobs is the order of `jobs` in the data. Standard library plus the argv reader
(recipes/argv.py), so it imports without Django.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from recipes.argv import max_num_seqs_from

DATA_DIR = Path(__file__).resolve().parent / "data"


def _read(name: str) -> dict:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


_SUITES = _read("suites.json")
_CATALOGUE = _read("models.json")
_HUB_FACTS = {repo: facts for repo, facts in _read("hub_facts.json").items() if "/" in repo}


def hub_facts_of(repo: str) -> tuple[int | None, dict | None]:
    """(weight bytes, config.json) the demo's Hub answer gives `repo`, or (None, None)."""
    facts = _HUB_FACTS.get(repo) or {}
    return facts.get("weight_bytes"), facts.get("config")


def weight_sizes(model: DemoModel) -> dict[str, int] | None:
    """The size the demo's Hub lists for each weight file: the repo's weight bytes split evenly
    (the remainder on the first file); None when the demo has no facts for the repo."""
    total, _ = hub_facts_of(model.hf_repo)
    if total is None:
        return None
    files = sorted(model.weight_files)
    share, extra = divmod(total, len(files))
    return {path: share + (extra if i == 0 else 0) for i, path in enumerate(files)}


# --- suites -----------------------------------------------------------------------------------

TEXT_SUITE_ID: str = _SUITES["text"]["suite_id"]
AGENTIC_SUITE_ID: str = _SUITES["agentic"]["suite_id"]
VISION_SUITE_ID: str = _SUITES["modalities"]["vision"]["suite_id"]
AUDIO_SUITE_ID: str = _SUITES["modalities"]["audio"]["suite_id"]
VIDEO_SUITE_ID: str = _SUITES["modalities"]["video"]["suite_id"]
PERF_SUITE_ID: str = _SUITES["perf"]["suite_id"]

CATEGORY_COUNTS: dict[str, int] = _SUITES["text"]["categories"]
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_COUNTS)
PERF_CATEGORIES = tuple(name.lower() for name in CATEGORIES)
HARNESS_VERSIONS: dict[str, str] = _SUITES["agentic"]["harnesses"]
HARNESSES = tuple(HARNESS_VERSIONS)
# (slug, criteria count, artifact kind or None)
AGENTIC_TASKS = tuple(tuple(task) for task in _SUITES["agentic"]["tasks"])
AGENTIC_GOD_TASKS = tuple(tuple(task) for task in _SUITES["agentic"]["god_mode_tasks"])
# (modality, suite id, ((case name, category, difficulty), …)); ids are `<modality>.<name>`.
MODALITY_SUITES = tuple(
    (modality, suite["suite_id"], tuple(tuple(case) for case in suite["cases"]))
    for modality, suite in _SUITES["modalities"].items()
)
# (criterion id, question) of the rubric-scored text categories
RUBRICS: dict[str, tuple[tuple[str, str], ...]] = {
    category: tuple(tuple(criterion) for criterion in criteria)
    for category, criteria in _SUITES["rubrics"].items()
}

# case id → an output the board grades right (board/grading.py), for every case it grades
TEXT_ANSWERS: dict[str, str] = _read("answers.json")

# --- hardware ---------------------------------------------------------------------------------

HARDWARE: dict[str, dict] = _CATALOGUE["hardware"]  # detected label → platform facts

# --- models -----------------------------------------------------------------------------------


def revision_for(repo: str) -> str:
    """A stable 40-hex commit for a repo name (demo data: no real Hub lookup)."""
    return hashlib.sha1(repo.encode()).hexdigest()


@dataclass(frozen=True)
class DemoModel:
    """One model + recipe line on one hardware, with the figures its demo job should show.

    `c1` holds the single-stream cohorts: (lowercase category, decode tok/s, TTFT p50 ms,
    TPOT p50 ms). `flags` are vLLM tuning flags (without --served-model-name/--host/--port);
    other engines keep their native arguments in `serve_args` and send no flags.
    `agentic` maps harness → harness score (mean task score × 100), or None when no harness ran.
    """

    key: str
    display_name: str
    hf_repo: str
    weight_files: tuple[str, ...]
    detected_label: str
    engine: str
    image: str | None
    serve_mode: str
    flags: tuple[str, ...]
    context_len: int
    quant: str
    architecture: str
    composite: float
    c1: tuple[tuple[str, float, float, float], ...]
    peak_category: str
    peak_conc: int
    peak_agg_tps: float
    ladder: tuple[int, ...]
    modalities: tuple[str, ...]
    agentic: tuple[tuple[str, float], ...] | None
    serve_args: tuple[str, ...] = ()
    drafter_repo: str | None = None
    spec_method: str | None = None
    spec_n: int | None = None
    port: int = 8000
    hf_revision: str = ""
    drafter_revision: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not self.hf_revision:
            object.__setattr__(self, "hf_revision", revision_for(self.hf_repo))
        if self.drafter_repo and not self.drafter_revision:
            object.__setattr__(self, "drafter_revision", revision_for(self.drafter_repo))

    @property
    def c1_figures(self) -> dict[str, tuple[float, float, float]]:
        return {cat: (decode, ttft, tpot) for cat, decode, ttft, tpot in self.c1}

    @property
    def single_stream_tps(self) -> float:
        """Mean c1 decode tok/s over the five categories (docs/cohorts.md §Single stream)."""
        return sum(decode for _, decode, _, _ in self.c1) / len(self.c1)

    @property
    def ttft_p50_ms(self) -> float:
        return sum(ttft for _, _, ttft, _ in self.c1) / len(self.c1)

    @property
    def tpot_p50_ms(self) -> float:
        return sum(tpot for _, _, _, tpot in self.c1) / len(self.c1)

    @property
    def agentic_scores(self) -> dict[str, float]:
        return dict(self.agentic or ())

    @property
    def max_num_seqs(self) -> int | None:
        return max_num_seqs_from(self.flags)

    @property
    def peak_cohort(self) -> str:
        return f"{self.peak_category} @ c{self.peak_conc}"


@dataclass(frozen=True)
class DemoJob:
    """One demo line as the demo loads it: which pod sends it, and when its bench started
    (`job_sig` hashes the start, so two jobs of one model on one box need two starts)."""

    model: DemoModel
    started: str
    pod: str


# How a published single-stream summary spreads over the five categories: speculative decoding
# pays off unevenly (code drafts well, free prose barely); prompts of some categories are longer.
DECODE_SHAPES = {
    "dflash": {"math": 1.10, "instruction": 0.93, "reasoning": 1.02, "coding": 1.28, "prose": 0.67},
    "mtp": {"math": 1.06, "instruction": 0.96, "reasoning": 1.00, "coding": 1.12, "prose": 0.86},
    "plain": {"math": 1.01, "instruction": 1.00, "reasoning": 0.98, "coding": 1.04, "prose": 0.97},
}
TTFT_SHAPE = {"math": 1.10, "instruction": 0.90, "reasoning": 1.00, "coding": 0.85, "prose": 1.15}


def _exact_mean_spread(mean: float, multipliers: list[float]) -> list[float]:
    """Values of mean × multiplier at 0.1 precision whose mean is exactly `mean`."""
    head = [round(mean * m, 1) for m in multipliers[:-1]]
    return head + [round(mean * len(multipliers) - sum(head), 1)]


def c1_from_summary(decode: float, ttft: float, tpot: float, shape: str):
    """Per-category c1 figures whose means equal the published single-stream figures."""
    d_mult = [DECODE_SHAPES[shape][c] for c in PERF_CATEGORIES]
    t_mult = [TTFT_SHAPE[c] for c in PERF_CATEGORIES]
    inverse = [1 / m for m in d_mult]
    p_mult = [v * len(inverse) / sum(inverse) for v in inverse]
    decodes = _exact_mean_spread(decode, d_mult)
    ttfts = _exact_mean_spread(ttft, t_mult)
    tpots = _exact_mean_spread(tpot, p_mult)
    return tuple(zip(PERF_CATEGORIES, decodes, ttfts, tpots, strict=True))


def shards(count: int, start: int = 1) -> tuple[str, ...]:
    last = count - 1 + start
    return tuple(f"model-{i:05d}-of-{last:05d}.safetensors" for i in range(start, last + 1))


def _weight_files(weights: dict) -> tuple[str, ...]:
    if "files" in weights:
        return tuple(weights["files"])
    return shards(weights["shards"], weights.get("first_shard", 1))


def _c1(entry: dict):
    if "c1" in entry:
        return tuple((cat, *figures) for cat, figures in entry["c1"].items())
    summary = entry["single_stream"]
    return c1_from_summary(
        summary["decode_tps"], summary["ttft_ms"], summary["tpot_ms"], summary["shape"]
    )


def _model(entry: dict) -> DemoModel:
    speculative = entry.get("speculative") or {}
    return DemoModel(
        key=entry["key"],
        display_name=entry["display_name"],
        hf_repo=entry["hf_repo"],
        weight_files=_weight_files(entry["weights"]),
        detected_label=entry["hardware"],
        engine=entry["engine"],
        image=entry["image"],
        serve_mode=entry["serve_mode"],
        flags=tuple(entry["flags"]),
        serve_args=tuple(entry.get("serve_args", ())),
        port=entry.get("port", 8000),
        context_len=entry["context_len"],
        quant=entry["quant"],
        architecture=entry["architecture"],
        composite=entry["composite"],
        c1=_c1(entry),
        peak_category=entry["peak"]["category"],
        peak_conc=entry["peak"]["conc"],
        peak_agg_tps=entry["peak"]["agg_tps"],
        ladder=tuple(entry["ladder"]),
        modalities=tuple(entry["modalities"]),
        agentic=tuple(entry["agentic"].items()) if entry["agentic"] else None,
        drafter_repo=entry.get("drafter_repo"),
        spec_method=speculative.get("method"),
        spec_n=speculative.get("n"),
        note=entry.get("note", ""),
    )


# The lines on the board today, earlier lines of the 816 recipe (its champion history:
# 33 → 517 → 816 tok/s on coding @ c64; DEMO_JOBS orders them), and other pods' runs of a recipe
# already on the board.
DEMO_MODELS: tuple[DemoModel, ...] = tuple(_model(entry) for entry in _CATALOGUE["models"])
RECIPE_HISTORY: tuple[DemoModel, ...] = tuple(
    _model(entry) for entry in _CATALOGUE["recipe_history"]
)
REPRODUCTIONS: tuple[DemoModel, ...] = tuple(_model(entry) for entry in _CATALOGUE["reproductions"])
# Single-flag experiments of the recipe lab (docs/lab.md): the 816 recipe with another draft
# length and without its drafter, on the second and a third Spark pod.
EXPERIMENTS: tuple[DemoModel, ...] = tuple(
    _model(entry) for entry in _CATALOGUE.get("experiments", ())
)
ALL_DEMO_MODELS = DEMO_MODELS + RECIPE_HISTORY + REPRODUCTIONS + EXPERIMENTS


def demo_model(key: str) -> DemoModel:
    """The demo model line with this key."""
    for model in ALL_DEMO_MODELS:
        if model.key == key:
            return model
    raise KeyError(key)


GEMMA4_26B_816 = demo_model("gemma-4-26b-a4b-dflash-spark")
DEMO_JOBS: tuple[DemoJob, ...] = tuple(
    DemoJob(model=demo_model(job["model"]), started=job["started"], pod=job["pod"])
    for job in _CATALOGUE["jobs"]
)
