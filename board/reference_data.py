"""Reference data the board needs before any run arrives: the known suites (docs/trust-and-ranking.md §Suites)
and the preset hardware classes (docs/hardware-classes.md §Preset classes). Written after every `migrate` (and every test-database
flush) by a post_migrate handler; idempotent. A new suite version is a new row here or in the admin."""

from board.hardware import SEEDED_CLASSES

SUITES = (
    # suite_id, kind, case_count, categories, current
    (
        "aeon-suite-v4",
        "text",
        174,
        {"Math": 34, "Instruction": 34, "Reasoning": 35, "Coding": 36, "Prose": 35},
        True,
    ),
    ("aeon-suite-v3", "text", 155, {}, False),
    ("aeon-agentic-v2.5", "agentic", 31, {}, False),
    ("aeon-vision-v2", "vision", 31, {}, False),
    ("aeon-audio-v2", "audio", 21, {}, False),
    ("aeon-video-v1", "video", 10, {}, False),
    ("aeon-perf-v1", "perf", None, {}, False),
)


def seed_reference_data(using: str = "default", **kwargs) -> None:
    """post_migrate receiver: suites are created once (then edited as data), presets kept current."""
    from board.answer_cache import fresh_generation
    from board.models import BoardGeneration, HardwareClass, Suite
    from board.services import hardware_class_fields

    # One statement each (it runs after every migrate, and after every transactional test's
    # flush): the missing suites are added, existing ones are left as edited; every preset is
    # inserted or brought up to date on its slug.
    Suite.objects.using(using).bulk_create(
        [
            Suite(
                suite_id=suite_id,
                kind=kind,
                case_count=case_count,
                categories=categories,
                current=current,
            )
            for suite_id, kind, case_count, categories, current in SUITES
        ],
        ignore_conflicts=True,
    )
    HardwareClass.objects.using(using).bulk_create(
        [
            HardwareClass(slug=spec.slug, **hardware_class_fields(spec), preset=True)
            for spec in SEEDED_CLASSES
        ],
        update_conflicts=True,
        unique_fields=["slug"],
        update_fields=[*hardware_class_fields(SEEDED_CLASSES[0]), "preset"],
    )
    # Cached answers are keyed by it; a fresh database starts from a number never used before.
    BoardGeneration.objects.using(using).get_or_create(
        pk=1, defaults={"number": fresh_generation()}
    )
