"""What a one-click recipe may carry (docs/recipes.md §The serve-flag policy).

Pods apply the first entry of their champion list in one click and merge its flags into their
engine's argv, so what the board hands them must not load anybody's code, reach the network or
read files other than the model's and the drafter's own pinned ones (mounted at /model and
/drafter). The engines' lists (recipes/engine_flags/) say, per engine family, which flags a
one-click recipe may carry, with a check of each value (recipes/flag_checks.py), and name the
flags that are never handed out; this module checks a recipe against them: anything off the
list is unknown and keeps a recipe from being one-click. It also checks the image
(recipes/images.py) and the drafter (verified at a pinned commit on the Hub).

Pure Python: it reads flags with the one argv reader (recipes/argv.py) and touches no database.
The pods' list, the champion API, the commands and the pages all ask `check_recipe`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from recipes.argv import Arg, read_argv
from recipes.engine_flags import ALWAYS_REFUSED, ENGINE_FAMILIES
from recipes.flag_checks import DRAFTER_PATH, EnginePolicy, Refusal
from recipes.images import offered_image

__all__ = [
    "FlagCheck",
    "Reason",
    "Verdict",
    "check_flags",
    "check_recipe",
    "drafter_verified_by",
    "loads_drafter",
    "uses_drafter",
]

# Reason codes (stable: the APIs carry them).
REFUSED = "refused_flag"  # loads code, reaches the network or reads other files: never handed out
UNKNOWN = "unknown_flag"  # not on the engine's list: shown, flagged, left out
BAD_VALUE = "bad_value"  # on the list, but its value fails the check
IMAGE_WITHHELD = "image_withheld"  # measured on an image off the allowlist
DRAFTER_UNVERIFIED = "drafter_unverified"  # no drafter repository verified at a pinned commit
ENGINE_UNKNOWN = "engine_unknown"  # no policy for this engine: nothing it carries is checked

NEEDS_DRAFTER = "points at the drafter, which was not verified"


@dataclass(frozen=True)
class FlagCheck:
    """One flag of a recipe with the policy's word on it."""

    arg: Arg
    status: str  # "allowed", or the reason code
    message: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == "allowed"

    @property
    def tokens(self) -> list[str]:
        return self.arg.tokens()

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def as_json(self) -> dict:
        return {"flag": self.text, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class Reason:
    """Why a recipe is not one-click."""

    code: str
    message: str
    flag: str | None = None

    def as_json(self) -> dict:
        return {"code": self.code, "flag": self.flag, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """The policy's word on a recipe: one-click when nothing stands in the way."""

    flags: tuple[FlagCheck, ...]
    reasons: tuple[Reason, ...]

    @property
    def one_click(self) -> bool:
        return not self.reasons

    @property
    def drafter_ok(self) -> bool:
        return not any(reason.code == DRAFTER_UNVERIFIED for reason in self.reasons)

    @property
    def kept(self) -> list[FlagCheck]:
        """The flags that pass (those naming an unverified drafter do not): what a copyable
        command may carry."""
        return [
            f for f in self.flags if f.allowed and (self.drafter_ok or not loads_drafter(f.arg))
        ]

    @property
    def offered_flags(self) -> list[str]:
        return [token for flag in self.kept for token in flag.tokens]

    @property
    def statuses(self) -> list[FlagCheck]:
        """Every flag in order with its status, a flag naming an unverified drafter as such."""
        kept = self.kept
        return [
            FlagCheck(flag.arg, DRAFTER_UNVERIFIED, NEEDS_DRAFTER)
            if flag.allowed and flag not in kept
            else flag
            for flag in self.flags
        ]

    @property
    def left_out(self) -> list[FlagCheck]:
        return [flag for flag in self.statuses if not flag.allowed]

    def as_json(self) -> dict:
        return {
            "one_click": self.one_click,
            "reasons": [reason.as_json() for reason in self.reasons],
        }


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|^(?:www\.)", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s")


# --- the verdicts -------------------------------------------------------------------------------


def check_flags(engine: str, flags: Iterable[str]) -> tuple[FlagCheck, ...]:
    """Each flag of the recipe with its status (allowed, refused, unknown, bad value)."""
    policy = ENGINE_FAMILIES.get(engine)
    checked = []
    for arg in read_argv(list(flags)):
        checked.append(_check_arg(policy, arg))
    return tuple(checked)


def _check_arg(policy: EnginePolicy | None, arg: Arg) -> FlagCheck:
    if not arg.is_option:
        return FlagCheck(arg, UNKNOWN, "a stray word, not an option")
    value = arg.value
    refused = (policy.refused if policy is not None else {}).get(arg.name) or ALWAYS_REFUSED.get(
        arg.name
    )
    if refused:
        return FlagCheck(arg, REFUSED, refused)
    if value is not None and _URL.search(value):
        return FlagCheck(arg, REFUSED, "names a URL: reaches the network")
    if policy is None:
        return FlagCheck(arg, UNKNOWN, "the board has no flag list for this engine")
    rule = policy.rules.get(arg.name)
    if rule is None:
        return FlagCheck(arg, UNKNOWN, "not on this engine's list of one-click flags")
    if value is not None and _WHITESPACE.search(value) and not value.lstrip().startswith("{"):
        problem = "a value with spaces"
    else:
        problem = rule.check(value)
    if problem is None:
        return FlagCheck(arg, "allowed")
    if isinstance(problem, Refusal):
        return FlagCheck(arg, REFUSED, str(problem))
    if rule.refusal is not None:
        return FlagCheck(arg, REFUSED, rule.refusal)
    return FlagCheck(arg, BAD_VALUE, f"expects {problem}")


def loads_drafter(arg: Arg) -> bool:
    """The flag points the engine at the drafter mounted at /drafter."""
    value = arg.value or ""
    if value == DRAFTER_PATH or value.startswith(DRAFTER_PATH + "/"):
        return True
    return value.startswith("{") and f'"{DRAFTER_PATH}' in value


def uses_drafter(spec) -> bool:
    """A drafter model is loaded: named on the Hub, or mounted at /drafter by a flag."""
    if (spec.drafter or {}).get("repo"):
        return True
    return any(loads_drafter(arg) for arg in read_argv(list(spec.flags)))


_COMMIT = re.compile(r"[0-9a-f]{40}")


def drafter_verified_by(statuses: Iterable[str]) -> bool:
    """The weight check's drafter statuses of a benchmark's runs (`Run.drafter_status`) say the
    drafter was found on the Hub at its pinned commit: one run says so and none says otherwise."""
    found = set(statuses)
    return "pinned_ok" in found and not found & {"unpinned", "missing"}


def check_recipe(spec, *, drafter_verified: bool) -> Verdict:
    """Whether pods may apply `spec` (a RecipeSpec) in one click, and if not, why.

    `drafter_verified`: the drafter's repository was found on the Hub at the recipe's pinned
    commit (the weight check's drafter check, `drafter_status == "pinned_ok"` on the runs)."""
    flags = check_flags(spec.engine, spec.flags)
    reasons: list[Reason] = []
    if spec.engine not in ENGINE_FAMILIES:
        reasons.append(
            Reason(
                ENGINE_UNKNOWN, f"the board has no one-click policy for the {spec.engine} engine"
            )
        )
    for flag in flags:
        if not flag.allowed:
            reasons.append(Reason(flag.status, flag.message, flag.text))
    _, image_note = offered_image(spec.image)
    if image_note:
        reasons.append(
            Reason(
                IMAGE_WITHHELD,
                "measured on a container image off this board's allowlist: pods would run "
                "another image than the one measured",
            )
        )
    if uses_drafter(spec):
        drafter = spec.drafter or {}
        if not drafter.get("repo"):
            problem = "the recipe loads a drafter but names no Hugging Face repository for it"
        elif not _COMMIT.fullmatch(str(drafter.get("revision") or "")):
            problem = "the drafter is not pinned to a commit"
        elif not drafter_verified:
            problem = "the drafter was not verified on Hugging Face at its pinned commit"
        else:
            problem = None
        if problem:
            reasons.append(Reason(DRAFTER_UNVERIFIED, problem))
    return Verdict(flags, tuple(reasons))
