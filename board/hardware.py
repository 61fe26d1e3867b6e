"""Hardware labels → hardware classes (docs/hardware-classes.md, docs/protocol.md §Environment).

A run is ranked within the hardware class its pod reported: `detected_label` when the pod could
probe the machine, else the operator's claimed `label`. This module turns either label into a
`HardwareClassSpec` (slug, display name, family, device count, known facts) and says how classes
are ordered on the board. Pure Python on purpose: ingest, the seed migration and the champion
API all call it. No Django, no DB.

Device count is part of every class: `2× NVIDIA RTX 5090` is not `NVIDIA RTX 5090`, because a
tensor-parallel-2 recipe cannot run on one card. Facts describe the class as a whole:
`memory_bandwidth_gbs` is per device (what bounds single-stream decode on each device), while
`memory_gb` is the total (per-device memory × device count).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "SEEDED_CLASSES",
    "Family",
    "HardwareClassSpec",
    "board_order_key",
    "classify_hardware",
    "is_rankable_class",
    "normalise_label",
    "query_device_count",
]

# Labels are untrusted operator text; nothing real is this long, so do not try to parse it.
MAX_LABEL_LENGTH = 200
# A label claiming more devices than a pod could hold is junk, not a class worth a table row.
MAX_DEVICE_COUNT = 64
MAX_CLASS_TEXT = 200  # HardwareClass.slug and .name hold 200 characters


class Family(StrEnum):
    """A str enum, so a family is its value in templates, JSON and DB columns."""

    DGX_SPARK = "dgx_spark"
    NVIDIA_RTX = "nvidia_rtx"
    NVIDIA_RTX_PRO = "nvidia_rtx_pro"
    NVIDIA_DATACENTER = "nvidia_datacenter"
    NVIDIA_OTHER = "nvidia_other"
    NVIDIA_UNIDENTIFIED = "nvidia_unidentified"
    APPLE = "apple"
    AMD = "amd"
    UNLABELED = "unlabeled"


@dataclass(frozen=True)
class HardwareClassSpec:
    """One hardware class: runs are only ever compared within one.

    `memory_bandwidth_gbs` is per device; `memory_gb` is the class total (per device × count).
    """

    slug: str
    name: str
    family: Family
    device_count: int
    memory_bandwidth_gbs: float | None = None
    memory_gb: float | None = None
    unified_memory: bool | None = None


@dataclass(frozen=True)
class _Device:
    """One kind of device, before a device count makes it a class; facts are per device."""

    name: str
    family: Family
    memory_bandwidth_gbs: float | None = None
    memory_gb: float | None = None
    unified_memory: bool | None = None


# docs/hardware-classes.md §Known facts: (bandwidth GB/s, memory GB, unified) per device, keyed by device name.
_KNOWN_FACTS: dict[str, tuple[float | None, float | None, bool | None]] = {
    "DGX Spark": (273.0, 128.0, True),
    "NVIDIA RTX 5090": (1792.0, 32.0, False),
    "NVIDIA RTX 4090": (1008.0, 24.0, False),
    "NVIDIA RTX PRO 6000 Blackwell": (1792.0, 96.0, False),
    "NVIDIA A100 80GB": (2039.0, 80.0, False),
    "NVIDIA H100 80GB": (3350.0, 80.0, False),
    "NVIDIA H200 141GB": (4800.0, 141.0, False),
    # Apple memory is a configuration of the chip, not part of the class.
    "Apple M4 Max": (546.0, None, True),
    "Apple M3 Ultra": (819.0, None, True),
    "AMD Instinct MI300X": (5300.0, 192.0, False),
}

# Datacenter parts sold in one memory size: a label without the size still names that part.
_ONLY_MEMORY_SIZE_GB = {"H200": 141}

_UNLABELED = HardwareClassSpec(
    slug="unlabeled", name="Unlabeled", family=Family.UNLABELED, device_count=1
)

_COUNT_WORDS = {"single": 1, "dual": 2, "triple": 3, "quad": 4}

_CPU_ONLY = re.compile(r".*\(\s*cpu\s*\)|cpu", re.IGNORECASE)

# "dual DGX Spark (GB10)", "2x RTX 5090 32GB", "2 × …" (× is folded to x before matching).
_LEADING_COUNT = re.compile(
    r"""
    (?: (?P<word>single|dual|triple|quad) \s+
      | (?P<number>\d+) \s* x \s*
    )
    (?P<rest>.+)
    """,
    re.IGNORECASE | re.VERBOSE,
)

# "NVIDIA GPU x2 (unidentified)": a standalone "x<n>" token anywhere after the device name.
_TRAILING_COUNT = re.compile(r"(?<!\S)x\s*(?P<number>\d+)(?!\S)", re.IGNORECASE)

_DGX_SPARK = re.compile(
    r"(?:nvidia\s+)?(?:dgx\s+spark(?:\s*\(\s*gb10\s*\))?|gb10)",
    re.IGNORECASE,
)

_RTX_PRO = re.compile(
    r"""
    (?:nvidia\s+)? rtx \s+ pro \s+ (?P<model>\d{4}) (?!\d)
    .*                              # Blackwell / Workstation / Max-Q / Server Edition, memory
    """,
    re.IGNORECASE | re.VERBOSE,
)

_GEFORCE_RTX = re.compile(
    r"""
    (?:nvidia\s+)? (?:geforce\s+)?
    rtx \s+ (?P<model>\d{4})
    (?: \s* (?P<variant>ti\s+super|ti|super|d) )?
    (?P<laptop> \s+ laptop (?:\s+gpu)? )?
    (?: \s+ \d+ \s* gb )?           # the memory size is fixed by the model
    (?: \s+ g?ddr\w* )?
    """,
    re.IGNORECASE | re.VERBOSE,
)

_DATACENTER = re.compile(
    r"""
    (?:nvidia\s+)? (?:tesla\s+)?
    (?P<model>gh200|gb200|gb300|a100|a800|a10g|a10|a16|a30|a40|h100|h200|h800|h20
             |b100|b200|b300|l40s|l40|l4|t4|v100)
    (?![a-z0-9])
    (?P<rest>.*)                    # form factor and memory: "-SXM4-80GB", " 80GB HBM3", " NVL"
    """,
    re.IGNORECASE | re.VERBOSE,
)

_MEMORY_SIZE = re.compile(r"(?<!\d)(?P<gb>\d+)\s*gb\b", re.IGNORECASE)

_NVIDIA_UNIDENTIFIED = re.compile(r"nvidia\s+gpus?(?:\s*\(\s*unidentified\s*\))?", re.IGNORECASE)

_APPLE = re.compile(
    r"""
    (?:apple\s+)?
    (?: (?:macbook(?:\s+(?:pro|air))? | mac\s+(?:studio|mini|pro) | imac | mac) \s+ )?
    (?:apple\s+)?
    m (?P<generation>\d+)
    (?: \s+ (?P<tier>pro|max|ultra) )?
    (?![a-z0-9])
    .*                              # memory size and core counts configure the same chip
    """,
    re.IGNORECASE | re.VERBOSE,
)

_AMD_INSTINCT = re.compile(
    r"(?:amd\s+)?(?:instinct\s+)?(?P<model>mi\d{2,3}[a-z]*)(?![a-z0-9]).*",
    re.IGNORECASE,
)

_AMD_OTHER = re.compile(r"amd\s+(?P<rest>.+)|(?P<radeon>radeon\s+.+)", re.IGNORECASE)

_NVIDIA_OTHER = re.compile(
    r"""
      (?:nvidia\s+)? (?P<family_word> (?:geforce|rtx|gtx|quadro|titan|tesla) \s+ .+ )
    | nvidia \s+ (?P<rest>.+)
    """,
    re.IGNORECASE | re.VERBOSE,
)


def normalise_label(label: str | None) -> HardwareClassSpec:
    """The hardware class a label names; CPU-only, empty, unrecognised labels are Unlabeled.

    A comma list of mixed GPUs is one class named by its parts joined with " + " (sorted, so the
    same box is one class whatever its slot order), family nvidia_other (amd when all AMD);
    a list with an unrecognised part, a Spark, a Mac or a mix of vendors is Unlabeled.
    """
    text = _clean(label)
    if not text or len(text) > MAX_LABEL_LENGTH:
        return _UNLABELED
    devices: dict[_Device, int] = {}
    for piece in text.split(","):
        if not piece.strip():
            continue
        counted = _counted_device(piece.strip())
        if counted is None:
            return _UNLABELED
        device, count = counted
        devices[device] = devices.get(device, 0) + count
    total = sum(devices.values())
    if not devices or total > MAX_DEVICE_COUNT:
        return _UNLABELED
    if len(devices) == 1:
        [(device, count)] = devices.items()
        spec = _class_of(device, count)
    else:
        spec = _mixed_class(devices)
    # A class is a row: a name or slug longer than its columns names no real machine.
    if max(len(spec.slug), len(spec.name)) > MAX_CLASS_TEXT:
        return _UNLABELED
    return spec


def query_device_count(label: str | None) -> int | None:
    """The device count a hardware query asks for (docs/champions.md §The champion recipes pods
    fetch): the count its label names (`2× RTX 5090 32GB`, `dual DGX Spark`, `NVIDIA GPU ×2`),
    one for a card named without a count (pods label one card `RTX 5090 32GB`), and None when
    it asks for no count — a Spark named without one (pods always write `single`/`dual`…, so
    `dgx spark` is a person's query for every count) or a query naming no class at all."""
    spec = normalise_label(label)
    if spec.family is Family.UNLABELED:
        return None
    if spec.family is Family.DGX_SPARK:
        pieces = [piece.strip() for piece in _clean(label).split(",") if piece.strip()]
        named = any(
            _LEADING_COUNT.fullmatch(piece) or _TRAILING_COUNT.search(piece) for piece in pieces
        )
        return spec.device_count if named else None
    return spec.device_count


def classify_hardware(
    detected_label: str | None, claimed_label: str | None = None
) -> tuple[HardwareClassSpec, bool]:
    """Returns (class, claimed) — claimed is True when detected_label is null/empty and the
    operator's label was used.

    A detected label always wins, even an unrecognised one: an operator claim never overrides
    what the pod measured.
    """
    if _clean(detected_label):
        return normalise_label(detected_label), False
    if _clean(claimed_label):
        return normalise_label(claimed_label), True
    return _UNLABELED, False


def is_rankable_class(spec: HardwareClassSpec) -> bool:
    """Whether a class can hold a champion: every class but Unlabeled."""
    return spec.family is not Family.UNLABELED


def board_order_key(spec: HardwareClassSpec, best_throughput: float | None) -> tuple:
    """Sort key for the board: Spark classes by node count, then other classes by their best
    throughput (highest first; classes with none after), Unlabeled last; slug breaks ties."""
    if spec.family is Family.DGX_SPARK:
        return (0, spec.device_count, 0, 0.0, spec.slug)
    if not is_rankable_class(spec):
        return (2, 0, 0, 0.0, spec.slug)
    if best_throughput is None or not math.isfinite(best_throughput):
        return (1, 0, 1, 0.0, spec.slug)
    return (1, 0, 0, -best_throughput, spec.slug)


def _clean(label: str | None) -> str:
    """Printable text with × folded to x and whitespace runs collapsed to one space."""
    if not label:
        return ""
    printable = "".join(ch if ch.isprintable() else " " for ch in label.replace("×", "x"))
    return " ".join(printable.split())


def _counted_device(text: str) -> tuple[_Device, int] | None:
    """One comma-free part of a label → (device, count), or None when it names no device."""
    if _CPU_ONLY.fullmatch(text):
        return None
    count = 1
    if leading := _LEADING_COUNT.fullmatch(text):
        word, number = leading["word"], leading["number"]
        count = _COUNT_WORDS[word.lower()] if word else int(number)
        text = leading["rest"]
    if trailing := _TRAILING_COUNT.search(text):
        count *= int(trailing["number"])
        text = " ".join((text[: trailing.start()] + text[trailing.end() :]).split())
    if not 1 <= count <= MAX_DEVICE_COUNT:
        return None
    device = _identify_device(text)
    return (device, count) if device else None


def _identify_device(text: str) -> _Device | None:
    """The device a count-free label part names, tried from most to least specific."""
    if _DGX_SPARK.fullmatch(text):
        return _device("DGX Spark", Family.DGX_SPARK)
    if match := _RTX_PRO.fullmatch(text):
        # Every RTX PRO part is Blackwell; labels that omit the word name the same card.
        return _device(f"NVIDIA RTX PRO {match['model']} Blackwell", Family.NVIDIA_RTX_PRO)
    if match := _GEFORCE_RTX.fullmatch(text):
        variant = {"ti": " Ti", "super": " SUPER", "ti super": " Ti SUPER", "d": " D"}.get(
            " ".join((match["variant"] or "").lower().split()), ""
        )
        # A laptop part shares the model number but not the memory or bandwidth.
        laptop = " Laptop GPU" if match["laptop"] else ""
        return _device(f"NVIDIA RTX {match['model']}{variant}{laptop}", Family.NVIDIA_RTX)
    if match := _DATACENTER.fullmatch(text):
        model = match["model"].upper()
        memory = _MEMORY_SIZE.search(match["rest"])
        memory_gb = int(memory["gb"]) if memory else _ONLY_MEMORY_SIZE_GB.get(model)
        name = f"NVIDIA {model} {memory_gb}GB" if memory_gb else f"NVIDIA {model}"
        return _device(name, Family.NVIDIA_DATACENTER)
    if _NVIDIA_UNIDENTIFIED.fullmatch(text):
        return _device("NVIDIA GPU (unidentified)", Family.NVIDIA_UNIDENTIFIED)
    if match := _APPLE.fullmatch(text):
        tier = f" {match['tier'].title()}" if match["tier"] else ""
        name = f"Apple M{int(match['generation'])}{tier}"
        return _device(name, Family.APPLE, unified_memory=True)
    if match := _AMD_INSTINCT.fullmatch(text):
        return _device(f"AMD Instinct {match['model'].upper()}", Family.AMD)
    if match := _AMD_OTHER.fullmatch(text):
        return _device(f"AMD {_cleaned_part_name(match['rest'] or match['radeon'])}", Family.AMD)
    if match := _NVIDIA_OTHER.fullmatch(text):
        rest = _cleaned_part_name(match["family_word"] or match["rest"])
        return _device(f"NVIDIA {rest}", Family.NVIDIA_OTHER) if rest else None
    return None


def _device(name: str, family: Family, *, unified_memory: bool | None = None) -> _Device:
    bandwidth, memory, unified = _KNOWN_FACTS.get(name, (None, None, unified_memory))
    return _Device(name, family, bandwidth, memory, unified)


def _cleaned_part_name(text: str) -> str:
    """A part name shown as labelled, minus GeForce, with model tokens and sizes uppercased."""
    text = re.sub(r"\bgeforce\b", " ", text, flags=re.IGNORECASE)
    text = _MEMORY_SIZE.sub(lambda m: f"{m['gb']}GB", text)
    # Tokens holding a digit are model numbers or sizes ("a6000", "80gb"): one casing for all.
    return " ".join(tok.upper() if any(c.isdigit() for c in tok) else tok for tok in text.split())


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _class_of(device: _Device, count: int) -> HardwareClassSpec:
    if count > 1:
        name = f"{count}× {device.name}"
    elif device.family is Family.DGX_SPARK:
        name = "Single DGX Spark"
    else:
        name = device.name
    return HardwareClassSpec(
        slug=f"{_slug(device.name)}-x{count}",
        name=name,
        family=device.family,
        device_count=count,
        memory_bandwidth_gbs=device.memory_bandwidth_gbs,
        memory_gb=device.memory_gb * count if device.memory_gb is not None else None,
        unified_memory=device.unified_memory,
    )


def _mixed_class(devices: dict[_Device, int]) -> HardwareClassSpec:
    """A box of different GPUs; bandwidth stays unset because no one per-device figure holds."""
    families = {device.family for device in devices}
    if families <= {Family.AMD}:
        family = Family.AMD
    elif Family.AMD not in families and families <= {
        Family.NVIDIA_RTX,
        Family.NVIDIA_RTX_PRO,
        Family.NVIDIA_DATACENTER,
        Family.NVIDIA_OTHER,
        Family.NVIDIA_UNIDENTIFIED,
    }:
        family = Family.NVIDIA_OTHER
    else:
        # No engine serves one model across vendors, a Spark or a Mac plus a card.
        return _UNLABELED
    parts = sorted(
        (_class_of(device, count) for device, count in devices.items()), key=lambda p: p.slug
    )
    memories = [part.memory_gb for part in parts]
    return HardwareClassSpec(
        slug="-plus-".join(part.slug for part in parts),
        name=" + ".join(part.name for part in parts),
        family=family,
        device_count=sum(part.device_count for part in parts),
        memory_bandwidth_gbs=None,
        memory_gb=None if None in memories else sum(memories),
        unified_memory=False if all(part.unified_memory is False for part in parts) else None,
    )


# The presets the board always lists, seeded from the labels pods actually send.
SEEDED_CLASSES: tuple[HardwareClassSpec, ...] = tuple(
    normalise_label(label)
    for label in (
        "single DGX Spark (GB10)",
        "dual DGX Spark (GB10)",
        "triple DGX Spark (GB10)",
        "quad DGX Spark (GB10)",
        "RTX 5090 32GB",
        "RTX 4090 24GB",
        "RTX PRO 6000 Blackwell Workstation Edition 96GB",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H200 141GB HBM3e",
        "Apple M4 Max",
        "Apple M3 Ultra",
        "AMD Instinct MI300X",
        "NVIDIA GPU (unidentified)",
        None,
    )
)
