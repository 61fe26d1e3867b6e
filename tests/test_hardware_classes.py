"""Hardware labels → hardware classes (docs/hardware-classes.md, docs/protocol.md §Environment)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from board.hardware import (
    SEEDED_CLASSES,
    Family,
    HardwareClassSpec,
    board_order_key,
    classify_hardware,
    is_rankable_class,
    normalise_label,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def seeded(name: str) -> HardwareClassSpec:
    [spec] = [spec for spec in SEEDED_CLASSES if spec.name == name]
    return spec


# --- DGX Spark -----------------------------------------------------------------------------


def test_a_single_spark_label_is_the_one_node_spark_class():
    spec = normalise_label("single DGX Spark (GB10)")
    assert (spec.slug, spec.name, spec.family, spec.device_count) == (
        "dgx-spark-x1",
        "Single DGX Spark",
        Family.DGX_SPARK,
        1,
    )


def test_a_dual_spark_label_is_the_two_node_spark_class():
    spec = normalise_label("dual DGX Spark (GB10)")
    assert (spec.slug, spec.name, spec.device_count) == ("dgx-spark-x2", "2× DGX Spark", 2)


@pytest.mark.parametrize(
    ("label", "slug", "name"),
    [
        ("triple DGX Spark (GB10)", "dgx-spark-x3", "3× DGX Spark"),
        ("quad DGX Spark (GB10)", "dgx-spark-x4", "4× DGX Spark"),
        ("5x DGX Spark (GB10)", "dgx-spark-x5", "5× DGX Spark"),
    ],
)
def test_triple_quad_and_numbered_spark_labels_count_their_nodes(label, slug, name):
    spec = normalise_label(label)
    assert (spec.slug, spec.name, spec.family) == (slug, name, Family.DGX_SPARK)


@pytest.mark.parametrize(
    "label",
    ["2× DGX Spark (GB10)", "2x DGX Spark (GB10)", "2X DGX Spark (GB10)", "2 × DGX Spark (GB10)"],
)
def test_a_two_node_spark_is_recognised_in_every_spelling_of_times(label):
    assert normalise_label(label).slug == "dgx-spark-x2"


def test_a_spark_class_keeps_per_node_bandwidth_and_totals_its_unified_memory():
    spec = normalise_label("dual DGX Spark (GB10)")
    assert spec.memory_bandwidth_gbs == 273
    assert spec.memory_gb == 256
    assert spec.unified_memory is True


# --- NVIDIA RTX and RTX PRO ----------------------------------------------------------------


def test_an_rtx_5090_label_is_the_rtx_5090_class_with_its_facts():
    spec = normalise_label("RTX 5090 32GB")
    assert (spec.slug, spec.name, spec.family, spec.device_count) == (
        "nvidia-rtx-5090-x1",
        "NVIDIA RTX 5090",
        Family.NVIDIA_RTX,
        1,
    )
    assert (spec.memory_bandwidth_gbs, spec.memory_gb, spec.unified_memory) == (1792, 32, False)


def test_two_rtx_5090s_are_a_different_class_from_one():
    one = normalise_label("RTX 5090 32GB")
    two = normalise_label("2× RTX 5090 32GB")
    assert two != one
    assert (two.slug, two.name, two.device_count) == (
        "nvidia-rtx-5090-x2",
        "2× NVIDIA RTX 5090",
        2,
    )
    assert two.memory_bandwidth_gbs == one.memory_bandwidth_gbs == 1792
    assert two.memory_gb == 64


@pytest.mark.parametrize(
    "label", ["NVIDIA GeForce RTX 5090", "GeForce RTX 5090", "NVIDIA RTX 5090", "RTX 5090"]
)
def test_the_geforce_prefix_and_memory_size_do_not_change_the_class(label):
    assert normalise_label(label) == normalise_label("RTX 5090 32GB")


def test_an_rtx_4090_has_its_own_facts():
    spec = normalise_label("NVIDIA GeForce RTX 4090")
    assert (spec.name, spec.memory_bandwidth_gbs, spec.memory_gb) == ("NVIDIA RTX 4090", 1008, 24)


def test_a_laptop_rtx_is_not_the_desktop_card():
    laptop = normalise_label("NVIDIA GeForce RTX 4090 Laptop GPU")
    assert laptop.name == "NVIDIA RTX 4090 Laptop GPU"
    assert laptop.slug != normalise_label("RTX 4090 24GB").slug
    assert laptop.memory_bandwidth_gbs is None


def test_rtx_ti_and_super_variants_are_distinct_classes():
    names = {
        normalise_label(label).name
        for label in ("RTX 4070", "RTX 4070 Ti", "RTX 4070 SUPER", "RTX 4070 Ti SUPER")
    }
    assert names == {
        "NVIDIA RTX 4070",
        "NVIDIA RTX 4070 Ti",
        "NVIDIA RTX 4070 SUPER",
        "NVIDIA RTX 4070 Ti SUPER",
    }


def test_an_rtx_pro_6000_blackwell_is_its_own_rtx_pro_class():
    spec = normalise_label("RTX PRO 6000 Blackwell Workstation Edition 96GB")
    assert (spec.slug, spec.name, spec.family) == (
        "nvidia-rtx-pro-6000-blackwell-x1",
        "NVIDIA RTX PRO 6000 Blackwell",
        Family.NVIDIA_RTX_PRO,
    )
    assert (spec.memory_bandwidth_gbs, spec.memory_gb, spec.unified_memory) == (1792, 96, False)


def test_rtx_pro_editions_of_one_model_share_a_class():
    workstation = normalise_label("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")
    max_q = normalise_label("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition")
    assert workstation == max_q
    assert normalise_label("RTX PRO 4000 Blackwell").name == "NVIDIA RTX PRO 4000 Blackwell"


# --- NVIDIA datacenter, other and unidentified ---------------------------------------------


def test_an_h100_label_is_cleaned_to_its_name_and_memory():
    spec = normalise_label("NVIDIA H100 80GB HBM3")
    assert (spec.slug, spec.name, spec.family) == (
        "nvidia-h100-80gb-x1",
        "NVIDIA H100 80GB",
        Family.NVIDIA_DATACENTER,
    )
    assert (spec.memory_bandwidth_gbs, spec.memory_gb) == (3350, 80)


def test_an_a100_sxm_label_is_cleaned_to_its_name_and_memory():
    spec = normalise_label("NVIDIA A100-SXM4-80GB")
    assert (spec.name, spec.family) == ("NVIDIA A100 80GB", Family.NVIDIA_DATACENTER)
    assert (spec.memory_bandwidth_gbs, spec.memory_gb) == (2039, 80)


def test_a100s_with_different_memory_are_different_classes():
    assert normalise_label("NVIDIA A100-PCIE-40GB").name == "NVIDIA A100 40GB"
    assert normalise_label("NVIDIA A100-PCIE-40GB") != normalise_label("NVIDIA A100-SXM4-80GB")


@pytest.mark.parametrize("label", ["NVIDIA H200 141GB HBM3e", "NVIDIA H200"])
def test_an_h200_is_the_141gb_class_even_when_the_label_omits_the_size(label):
    spec = normalise_label(label)
    assert (spec.name, spec.memory_bandwidth_gbs, spec.memory_gb) == (
        "NVIDIA H200 141GB",
        4800,
        141,
    )


def test_two_h100s_are_a_two_device_class_with_total_memory():
    spec = normalise_label("2x NVIDIA H100 80GB HBM3")
    assert (spec.slug, spec.name, spec.device_count, spec.memory_gb) == (
        "nvidia-h100-80gb-x2",
        "2× NVIDIA H100 80GB",
        2,
        160,
    )


def test_an_unknown_nvidia_part_is_named_by_its_cleaned_label():
    spec = normalise_label("NVIDIA RTX 6000 Ada Generation")
    assert (spec.name, spec.family) == ("NVIDIA RTX 6000 Ada Generation", Family.NVIDIA_OTHER)
    assert spec.memory_bandwidth_gbs is None
    assert normalise_label("NVIDIA GeForce GTX 1080 Ti").name == "NVIDIA GTX 1080 Ti"


def test_an_unidentified_nvidia_pair_is_the_two_device_unidentified_class():
    spec = normalise_label("NVIDIA GPU ×2 (unidentified)")
    assert (spec.slug, spec.name, spec.family, spec.device_count) == (
        "nvidia-gpu-unidentified-x2",
        "2× NVIDIA GPU (unidentified)",
        Family.NVIDIA_UNIDENTIFIED,
        2,
    )


def test_a_single_unidentified_nvidia_gpu_is_the_unidentified_class():
    spec = normalise_label("NVIDIA GPU (unidentified)")
    assert (spec.name, spec.device_count) == ("NVIDIA GPU (unidentified)", 1)
    assert spec == seeded("NVIDIA GPU (unidentified)")


# --- Apple and AMD -------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["MacBook Pro M4 48GB", "Apple M4 48GB", "Apple M4 16GB"])
def test_apple_labels_drop_the_machine_and_memory_configuration(label):
    spec = normalise_label(label)
    assert (spec.slug, spec.name, spec.family, spec.unified_memory) == (
        "apple-m4-x1",
        "Apple M4",
        Family.APPLE,
        True,
    )
    assert spec.memory_gb is None


def test_apple_m4_max_carries_its_bandwidth_whatever_its_memory():
    spec = normalise_label("Apple M4 Max 128GB")
    assert (spec.name, spec.memory_bandwidth_gbs, spec.unified_memory) == (
        "Apple M4 Max",
        546,
        True,
    )
    assert spec == normalise_label("MacBook Pro M4 Max 36GB")


def test_apple_pro_max_and_ultra_chips_are_distinct_classes():
    labels = ("Apple M4 48GB", "MacBook Pro M4 Pro 48GB", "Apple M4 Max 128GB", "Apple M3 Ultra")
    names = [normalise_label(label).name for label in labels]
    assert names == ["Apple M4", "Apple M4 Pro", "Apple M4 Max", "Apple M3 Ultra"]
    assert normalise_label("Mac Studio M3 Ultra 512GB").memory_bandwidth_gbs == 819


@pytest.mark.parametrize("label", ["AMD Instinct MI300X", "MI300X", "amd mi300x"])
def test_an_mi300x_is_the_amd_class_with_or_without_the_vendor(label):
    spec = normalise_label(label)
    assert (spec.slug, spec.name, spec.family) == (
        "amd-instinct-mi300x-x1",
        "AMD Instinct MI300X",
        Family.AMD,
    )
    assert (spec.memory_bandwidth_gbs, spec.memory_gb) == (5300, 192)


def test_other_amd_labels_are_classed_by_their_label():
    spec = normalise_label("AMD Radeon RX 7900 XTX")
    assert (spec.name, spec.family, spec.device_count) == ("AMD Radeon RX 7900 XTX", Family.AMD, 1)


# --- Unlabeled -----------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["x86_64 (CPU)", "aarch64 (CPU)", "arm64 (cpu)"])
def test_cpu_only_labels_are_unlabeled(label):
    assert normalise_label(label).name == "Unlabeled"


@pytest.mark.parametrize("label", [None, "", "   ", "Raspberry Pi 5", "[N/A]", "GPU"])
def test_empty_none_and_unrecognised_labels_are_unlabeled(label):
    spec = normalise_label(label)
    assert (spec.slug, spec.name, spec.family) == ("unlabeled", "Unlabeled", Family.UNLABELED)


def test_unlabeled_has_one_device_and_no_facts():
    spec = normalise_label(None)
    assert spec.device_count == 1
    assert (spec.memory_bandwidth_gbs, spec.memory_gb, spec.unified_memory) == (None, None, None)


@pytest.mark.parametrize("label", ["0x RTX 5090 32GB", "1000x RTX 5090 32GB"])
def test_absurd_device_counts_are_unlabeled(label):
    assert normalise_label(label).family is Family.UNLABELED


def test_an_overlong_label_is_unlabeled_rather_than_parsed():
    assert normalise_label("RTX 5090 " + "x" * 500).family is Family.UNLABELED


# --- mixed GPU lists -----------------------------------------------------------------------


def test_a_mixed_gpu_list_is_one_class_named_by_its_parts():
    spec = normalise_label("RTX 5090 32GB, RTX 4090 24GB")
    assert (spec.name, spec.family, spec.device_count) == (
        "NVIDIA RTX 4090 + NVIDIA RTX 5090",
        Family.NVIDIA_OTHER,
        2,
    )
    assert spec.memory_gb == 56
    assert spec.memory_bandwidth_gbs is None


def test_a_mixed_gpu_list_is_the_same_class_in_any_slot_order():
    assert normalise_label("RTX 5090 32GB, RTX 4090 24GB") == normalise_label(
        "RTX 4090 24GB, RTX 5090 32GB"
    )


def test_a_mixed_list_counts_every_device():
    spec = normalise_label("2× RTX 5090 32GB, RTX 4090 24GB")
    assert spec.name == "NVIDIA RTX 4090 + 2× NVIDIA RTX 5090"
    assert spec.device_count == 3
    assert spec != normalise_label("RTX 5090 32GB, RTX 4090 24GB")


def test_a_list_of_identical_gpus_is_the_multi_device_class():
    assert normalise_label("RTX 5090 32GB, RTX 5090 32GB") == normalise_label("2× RTX 5090 32GB")


@pytest.mark.parametrize(
    "label",
    [
        "RTX 5090 32GB, Raspberry Pi",
        "RTX 5090 32GB, Apple M4",
        "RTX 5090 32GB, AMD Instinct MI300X",
    ],
)
def test_a_list_with_an_unknown_part_or_mixed_vendors_is_unlabeled(label):
    assert normalise_label(label).family is Family.UNLABELED


# --- tolerance -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    ["  DUAL   dgx SPARK  (gb10) ", "2×DGX Spark", "2x\tDGX\u00a0Spark (GB10)", "Dual DGX Spark"],
)
def test_matching_ignores_case_and_extra_whitespace(label):
    assert normalise_label(label).slug == "dgx-spark-x2"


def test_a_label_with_lower_case_and_odd_spacing_is_the_same_rtx_class():
    assert normalise_label("2 x  nvidia   geforce rtx 5090  32 gb").slug == "nvidia-rtx-5090-x2"


# --- detected label vs operator claim ------------------------------------------------------


def test_the_detected_label_wins_over_the_operator_claim():
    spec, claimed = classify_hardware("single DGX Spark (GB10)", "RTX 5090 32GB")
    assert (spec.slug, claimed) == ("dgx-spark-x1", False)


@pytest.mark.parametrize("detected", [None, "", "  "])
def test_a_missing_detected_label_falls_back_to_the_operator_claim(detected):
    spec, claimed = classify_hardware(detected, "2× RTX 5090 32GB")
    assert (spec.slug, claimed) == ("nvidia-rtx-5090-x2", True)


def test_a_null_detected_label_with_no_claim_is_unlabeled_and_not_claimed():
    spec, claimed = classify_hardware(None)
    assert (spec.family, claimed) == (Family.UNLABELED, False)
    assert classify_hardware(None, "  ") == (spec, False)


def test_an_unrecognised_claim_is_unlabeled_but_still_marked_claimed():
    spec, claimed = classify_hardware(None, "my big rig")
    assert (spec.family, claimed) == (Family.UNLABELED, True)


def test_an_unrecognised_detected_label_does_not_fall_back_to_the_claim():
    spec, claimed = classify_hardware("x86_64 (CPU)", "RTX 5090 32GB")
    assert (spec.family, claimed) == (Family.UNLABELED, False)


# --- seeded classes ------------------------------------------------------------------------


def test_seeded_slugs_are_unique():
    slugs = [spec.slug for spec in SEEDED_CLASSES]
    assert len(slugs) == len(set(slugs)) == 15


def test_seeded_classes_are_the_presets_of_the_design():
    assert [spec.name for spec in SEEDED_CLASSES] == [
        "Single DGX Spark",
        "2× DGX Spark",
        "3× DGX Spark",
        "4× DGX Spark",
        "NVIDIA RTX 5090",
        "NVIDIA RTX 4090",
        "NVIDIA RTX PRO 6000 Blackwell",
        "NVIDIA A100 80GB",
        "NVIDIA H100 80GB",
        "NVIDIA H200 141GB",
        "Apple M4 Max",
        "Apple M3 Ultra",
        "AMD Instinct MI300X",
        "NVIDIA GPU (unidentified)",
        "Unlabeled",
    ]


@pytest.mark.parametrize(
    ("name", "bandwidth", "memory", "unified"),
    [
        ("Single DGX Spark", 273, 128, True),
        ("4× DGX Spark", 273, 512, True),
        ("NVIDIA RTX 5090", 1792, 32, False),
        ("NVIDIA RTX 4090", 1008, 24, False),
        ("NVIDIA RTX PRO 6000 Blackwell", 1792, 96, False),
        ("NVIDIA A100 80GB", 2039, 80, False),
        ("NVIDIA H100 80GB", 3350, 80, False),
        ("NVIDIA H200 141GB", 4800, 141, False),
        ("Apple M4 Max", 546, None, True),
        ("Apple M3 Ultra", 819, None, True),
        ("AMD Instinct MI300X", 5300, 192, False),
        ("NVIDIA GPU (unidentified)", None, None, None),
        ("Unlabeled", None, None, None),
    ],
)
def test_seeded_classes_carry_the_facts_of_the_design(name, bandwidth, memory, unified):
    spec = seeded(name)
    assert (spec.memory_bandwidth_gbs, spec.memory_gb, spec.unified_memory) == (
        bandwidth,
        memory,
        unified,
    )


@pytest.mark.parametrize("spec", SEEDED_CLASSES, ids=lambda spec: spec.slug)
def test_every_seeded_name_normalises_back_to_its_own_class(spec):
    assert normalise_label(spec.name) == spec


@pytest.mark.parametrize("spec", SEEDED_CLASSES, ids=lambda spec: spec.slug)
def test_seeded_slugs_are_url_safe_and_end_in_the_device_count(spec):
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", spec.slug)
    if spec.family is not Family.UNLABELED:
        assert spec.slug.endswith(f"-x{spec.device_count}")


# --- champions and board order -------------------------------------------------------------


def test_unlabeled_is_the_only_seeded_class_that_cannot_hold_a_champion():
    unrankable = [spec.name for spec in SEEDED_CLASSES if not is_rankable_class(spec)]
    assert unrankable == ["Unlabeled"]
    assert is_rankable_class(normalise_label("x86_64 (CPU)")) is False


def test_board_order_puts_sparks_by_node_count_then_others_by_throughput_then_unlabeled():
    best = {
        "Unlabeled": 9000.0,
        "NVIDIA RTX 5090": 1500.0,
        "4× DGX Spark": 900.0,
        "NVIDIA H100 80GB": 2400.0,
        "Single DGX Spark": 190.0,
        "Apple M4 Max": 120.0,
        "2× DGX Spark": 400.0,
    }
    ordered = sorted(best, key=lambda name: board_order_key(seeded(name), best[name]))
    assert ordered == [
        "Single DGX Spark",
        "2× DGX Spark",
        "4× DGX Spark",
        "NVIDIA H100 80GB",
        "NVIDIA RTX 5090",
        "Apple M4 Max",
        "Unlabeled",
    ]


def test_classes_without_a_measured_throughput_sort_after_those_with_one():
    best = {"NVIDIA RTX 4090": None, "Apple M3 Ultra": 5.0, "AMD Instinct MI300X": float("nan")}
    ordered = sorted(best, key=lambda name: board_order_key(seeded(name), best[name]))
    assert ordered[0] == "Apple M3 Ultra"
    assert set(ordered[1:]) == {"NVIDIA RTX 4090", "AMD Instinct MI300X"}
    assert board_order_key(seeded("NVIDIA RTX 4090"), None) < board_order_key(
        seeded("Unlabeled"), None
    )


def test_the_two_node_rtx_class_is_ordered_by_throughput_not_device_count():
    two = normalise_label("2× RTX 5090 32GB")
    one = normalise_label("RTX 5090 32GB")
    assert board_order_key(one, 2000.0) < board_order_key(two, 1000.0)


# --- purity --------------------------------------------------------------------------------


def test_the_module_imports_without_django():
    probe = "import sys, board.hardware; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=PROJECT_ROOT,
        env={"PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "False"
