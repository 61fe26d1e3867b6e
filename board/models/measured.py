"""What was measured: suites, models, hardware classes, benchmarks (comprehensive runs), the
runs of each board inside them, per-case results and perf cohorts.

Benchmarks carry their summary as columns (a read model): pages and the API read them and never
aggregate raw results per request.
"""

from django.db import models


class Trust(models.TextChoices):
    PENDING = "pending"
    ATTESTED = "attested"
    SELF_REPORTED = "self_reported"


class Verification(models.TextChoices):
    PENDING = "pending"
    VERIFIED = "verified"
    MISMATCH = "mismatch"
    UNVERIFIABLE = "unverifiable"
    NOT_APPLICABLE = "not_applicable"  # local weights and frontier APIs have nothing to check


class AttestationMethod(models.TextChoices):
    HF_PULL_SERVED = "hf_pull_served"
    ENDPOINT_FINGERPRINT = "endpoint_fingerprint"
    ENDPOINT_VERIFIED = "endpoint_verified"


class SuiteKind(models.TextChoices):
    TEXT = "text"
    AGENTIC = "agentic"
    VISION = "vision"
    AUDIO = "audio"
    VIDEO = "video"
    PERF = "perf"
    UNKNOWN = "unknown"


class Badge(models.TextChoices):
    AGENTIC_UNTESTED = "agentic_untested", "agentic untested"
    CLAIMED_HARDWARE = "claimed_hardware", "claimed hardware"
    BELOW_CONTEXT_FLOOR = "below_64k_floor", "below 64K floor"
    SECRET_DETECTED = "secret_detected", "secret detected"
    NO_PERF = "no_perf", "no perf run"
    NO_TEXT = "no_text", "no text run of the current suite"
    LOW_COVERAGE = "low_coverage", "coverage below 90 %"
    SEEDED = "bench_seed", "seeded (bench_seed set)"
    UNKNOWN_SUITE = "unknown_suite", "unknown suite"
    DRAFTER_UNPINNED = "drafter_unpinned", "drafter unpinned"
    DRAFTER_MISSING = "drafter_missing", "drafter missing on Hugging Face"
    DRAFTER_BARELY_ACCEPTING = "drafter_barely_accepting", "drafter barely accepting"
    BEYOND_ROOFLINE = "beyond_roofline", "beyond its roofline"
    WEIGHTS_PENDING = "weights_pending", "weights check pending"
    WEIGHTS_MISMATCH = "weights_mismatch", "weights mismatch"
    WEIGHTS_UNVERIFIABLE = "weights_unverifiable", "weights unverifiable"
    SELF_REPORTED = "self_reported", "self-reported"
    FRONTIER = "frontier", "frontier API (display only)"
    LOCAL_WEIGHTS = "local_weights", "local weights"
    UNLABELED_HARDWARE = "unlabeled_hardware", "unlabeled hardware"
    FLAGGED = "flagged", "flagged by a moderator"
    GRADING_DISPUTED = "grading_disputed", "scores disagree with the board's grading"
    SUITE_HASH_UNKNOWN = "suite_hash_unknown", "suite hash unknown"
    TIER_MISSING = "tier_missing", "a difficulty tier is missing"
    UNKNOWN_CASES = "unknown_cases", "cases not in the suite"
    EVIDENCE_COPY = "evidence_copy", "copy of another pod's run"


class Suite(models.Model):
    """A known suite version: added as data (a row), never as code."""

    suite_id = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=SuiteKind.choices)
    case_count = models.PositiveIntegerField(null=True, blank=True)
    categories = models.JSONField(default=dict, blank=True)  # {"Math": 34, …}
    current = models.BooleanField(default=False)  # the text suite complete benchmarks need

    def __str__(self) -> str:
        return self.suite_id


class HardwareClassQuerySet(models.QuerySet):
    def listed(self):
        """Classes shown publicly: the presets, and any class holding a published benchmark (a
        pod's label alone never puts a class on the board)."""
        published = Benchmark.objects.public().filter(hardware_class=models.OuterRef("pk"))
        return self.filter(models.Q(preset=True) | models.Exists(published))


class HardwareClass(models.Model):
    slug = models.SlugField(max_length=200, unique=True)
    name = models.CharField(max_length=200)
    family = models.CharField(max_length=32)
    device_count = models.PositiveSmallIntegerField(default=1)
    memory_bandwidth_gbs = models.FloatField(null=True, blank=True)
    memory_gb = models.FloatField(null=True, blank=True)
    unified_memory = models.BooleanField(null=True, blank=True)
    preset = models.BooleanField(default=False)  # seeded classes are always listed

    objects = HardwareClassQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "hardware classes"

    def __str__(self) -> str:
        return self.name


class BenchModel(models.Model):
    """An open model (or a frontier API, display only) under its canonical id."""

    canonical_id = models.CharField(max_length=300, unique=True)
    hf_repo = models.CharField(max_length=300, blank=True)
    display_name = models.CharField(max_length=300)
    is_frontier = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.canonical_id


class BenchmarkQuerySet(models.QuerySet):
    def public(self):
        """What visitors may see: not withheld for a detected secret."""
        return self.filter(withheld=False)

    def ranked(self):
        return self.filter(ranked=True)


class Benchmark(models.Model):
    """A comprehensive run: the runs of one key sharing a job_group, all of one weight set and
    one serving recipe (docs/recipes.md, "One benchmark, one weight set, one recipe").

    `weight_set` and `recipe` are fixed at creation; every column after `created_at` is derived
    and rewritten by `refresh_benchmark`.
    """

    public_id = models.CharField(
        max_length=16, unique=True
    )  # stable across rebuilds: from key + first group
    key_fingerprint = models.CharField(max_length=16, db_index=True)
    model = models.ForeignKey(BenchModel, on_delete=models.PROTECT, related_name="benchmarks")
    hardware_class = models.ForeignKey(
        HardwareClass, on_delete=models.PROTECT, related_name="benchmarks"
    )
    hardware_label = models.CharField(max_length=300, blank=True)
    # The weights_hash of every run, or "endpoint:<hash>" for a frontier endpoint; "" for none.
    weight_set = models.CharField(max_length=80, blank=True)
    recipe = models.ForeignKey(
        "recipes.Recipe", null=True, blank=True, on_delete=models.PROTECT, related_name="benchmarks"
    )
    created_at = models.DateTimeField(db_index=True)

    trust = models.CharField(max_length=16, choices=Trust.choices, default=Trust.PENDING)
    verification = models.CharField(
        max_length=16, choices=Verification.choices, default=Verification.PENDING
    )
    weight_differences = models.JSONField(default=list)
    withheld = models.BooleanField(
        default=False
    )  # a secret was detected; a moderator must clear it
    complete = models.BooleanField(default=False)
    ranked = models.BooleanField(default=False, db_index=True)
    badges = models.JSONField(default=list)
    composite = models.FloatField(null=True)
    coverage_label = models.CharField(max_length=40, blank=True)
    coverage_ratio = models.FloatField(null=True)
    categories = models.JSONField(default=list)
    agentic = models.JSONField(default=list)
    modalities = models.JSONField(default=dict)  # vision/audio/video scores: shown, never ranked
    peak_tps = models.FloatField(null=True)
    peak_cohort = models.CharField(max_length=60, blank=True)
    single_stream_tps = models.FloatField(null=True)
    single_stream_cohort = models.CharField(max_length=60, blank=True)
    ttft_ms = models.FloatField(null=True)
    tpot_ms = models.FloatField(null=True)
    latency_cohort = models.CharField(max_length=60, blank=True)
    context_len = models.PositiveIntegerField(null=True)
    submitted_at = models.DateTimeField(null=True)
    # A moderator's flag (kept in ModerationFlag, which a rebuild does not clear): public, never
    # ranked nor champion.
    flagged = models.BooleanField(default=False)
    # The runs that speak for the benchmark, and when the later of them committed: the
    # benchmark's place in the champion replay (docs/champions.md).
    text_run_id = models.CharField(max_length=32, blank=True)
    perf_run_id = models.CharField(max_length=32, blank=True)
    completed_at = models.DateTimeField(null=True)
    recipe_applicable = models.BooleanField(default=False)
    # docs/cohorts.md §Rooflines and §Drafter health, from the perf run: the bounds, the figures
    # beyond them and % of roofline; the drafter's acceptance.
    roofline = models.JSONField(default=dict)
    drafter_health = models.JSONField(default=dict)

    objects = BenchmarkQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["hardware_class", "ranked"]),
            models.Index(fields=["model", "ranked"]),
            # The tables' order (newest first) over what visitors see, whole and per class or
            # model: a page of 50 is read from the index whatever the number of benchmarks.
            models.Index(
                fields=["-submitted_at", "-id"],
                condition=models.Q(withheld=False),
                name="benchmark_public_order",
            ),
            models.Index(
                fields=["hardware_class", "-submitted_at", "-id"],
                condition=models.Q(withheld=False),
                name="benchmark_public_class_order",
            ),
            models.Index(
                fields=["model", "-submitted_at", "-id"],
                condition=models.Q(withheld=False),
                name="benchmark_public_model_order",
            ),
            # A resumed job's benchmark: the key's latest of one model on one class
            # (board/recording.py `resume_candidates`), whatever the number of benchmarks sharing a
            # recipe or a weight set.
            models.Index(
                fields=["key_fingerprint", "model", "hardware_class", "-created_at"],
                name="benchmark_resume_lookup",
            ),
        ]

    def __str__(self) -> str:
        return f"benchmark {self.pk} {self.model_id}"


class BenchmarkGroup(models.Model):
    """A job_group of a key and a benchmark it feeds; a resumed job adds a second group to a
    benchmark, and a group whose runs change weights or recipe feeds a second benchmark."""

    key_fingerprint = models.CharField(max_length=16)
    job_group = models.CharField(max_length=64)
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="groups")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["key_fingerprint", "job_group", "benchmark"], name="one_link_per_key_group"
            )
        ]


class RunQuerySet(models.QuerySet):
    def public(self):
        """Runs visitors may see: neither holding an uncleared secret nor part of a benchmark
        withheld for one (docs/recipes.md, "Secrets")."""
        return self.exclude(secret_detected=True, secret_cleared=False).exclude(
            benchmark__withheld=True
        )


class Run(models.Model):
    """One committed bundle of one board (text, perf, vision …), as its pod signed it.

    `key_fingerprint` names the pod; `board` never imports the pod channel's tables.
    """

    run_id = models.CharField(max_length=32, unique=True)
    key_fingerprint = models.CharField(max_length=16, db_index=True)
    model_name = models.CharField(max_length=300)
    board = models.CharField(max_length=32)
    suite_id = models.CharField(max_length=100, null=True, blank=True)
    job_sig = models.CharField(max_length=64, null=True, blank=True)
    job_group = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    committed_at = models.DateTimeField(db_index=True)
    bundle_sha256 = models.CharField(max_length=64)
    extras = models.JSONField(
        default=dict
    )  # every top-level key but results (artifact html left in the raw bundle)
    n_results = models.PositiveIntegerField(default=0)

    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="runs", null=True
    )
    kind = models.CharField(max_length=10, choices=SuiteKind.choices, default=SuiteKind.UNKNOWN)
    harness = models.CharField(max_length=60, blank=True)
    target_class = models.CharField(max_length=40, blank=True)
    hardware_label = models.CharField(max_length=300, blank=True)
    claimed_hardware = models.BooleanField(default=False)
    hf_repo = models.CharField(max_length=300, blank=True)
    hf_revision = models.CharField(max_length=300, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True)
    commit = models.CharField(max_length=40, blank=True)
    verification = models.CharField(
        max_length=16, choices=Verification.choices, default=Verification.PENDING
    )
    verification_note = models.TextField(blank=True)
    weight_differences = models.JSONField(default=list)
    verification_attempts = models.PositiveSmallIntegerField(default=0)
    verified_at = models.DateTimeField(null=True)
    drafter_status = models.CharField(max_length=16, blank=True)
    serves_own_weights = models.BooleanField(default=False)
    attestation_method = models.CharField(
        max_length=24, choices=AttestationMethod.choices, blank=True
    )
    trust = models.CharField(max_length=16, choices=Trust.choices, default=Trust.PENDING)
    secret_detected = models.BooleanField(default=False)
    secret_cleared = models.BooleanField(default=False)  # a moderator reviewed it: publish
    secret_pointers = models.JSONField(default=list)  # where, never what
    quality = models.JSONField(
        default=dict
    )  # text: categories, composite, coverage; agentic/modal: score
    perf = models.JSONField(
        default=dict
    )  # peak, single-stream, latency, overall rows, other sections
    flagged = models.BooleanField(default=False)  # a moderator's flag: shown, never counted
    # board/modelfacts.py of the verified commit (docs/cohorts.md §Rooflines); {} until verified.
    model_facts = models.JSONField(default=dict)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-committed_at"]
        indexes = [
            # The beat's sweep reads the pending runs every minute (submissions/weight_checks.py).
            models.Index(
                fields=["committed_at"],
                condition=models.Q(verification="pending"),
                name="run_pending_by_commit",
            )
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.board} {self.model_name}"


class Result(models.Model):
    # The row keys of docs/protocol.md §Result rows kept as columns; any other key lands in `extras`.
    # The pods' row schema declares the same keys (submissions.schemas.check_row_keys, on load).
    ROW_FIELDS = (
        "case_id",
        "category",
        "tier",
        "status",
        "score",
        "creativity",
        "raw_output",
        "evidence",
        "speed",
    )

    # No index of its own: the (run, case_id) unique constraint's index leads with the run.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results", db_index=False)
    position = models.PositiveIntegerField()
    case_id = models.CharField(max_length=200)
    category = models.CharField(max_length=100, blank=True)
    tier = models.SmallIntegerField(null=True)
    status = models.CharField(max_length=40)
    score = models.FloatField(null=True)
    creativity = models.FloatField(null=True)
    # UTF-8 bytes: completions may hold NUL, which PostgreSQL text cannot store.
    raw_output = models.BinaryField(default=b"")
    evidence = models.JSONField(null=True)
    speed = models.JSONField(null=True)
    extras = models.JSONField(default=dict)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case_id"], name="one_result_per_case")
        ]
        # A page of a run's cases is a range of positions (0 … n_results - 1): read from this
        # index, it costs the same whatever the run holds (docs/website.md §Reading a run).
        indexes = [models.Index(fields=["run", "position"], name="result_run_position")]

    @property
    def raw_text(self) -> str:
        return bytes(self.raw_output).decode("utf-8")


class PerfCohort(models.Model):
    """One measured pool: one prompt category at one concurrency (`coding @ c64`)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="cohorts")
    category = models.CharField(max_length=20)
    conc = models.PositiveIntegerField()
    label = models.CharField(max_length=60)
    aggregate_tps = models.FloatField()
    reported_aggregate_tps = models.FloatField()
    stream_ceiling_tps = models.FloatField()
    scheduling_efficiency = models.FloatField(null=True)
    decode_tps_mean = models.FloatField()
    ttft_ms_p50 = models.FloatField()
    ttft_ms_mean = models.FloatField(null=True)
    ttft_ms_p95 = models.FloatField(null=True)
    tpot_ms_p50 = models.FloatField(null=True)
    tpot_ms_mean = models.FloatField(null=True)
    tpot_ms_p95 = models.FloatField(null=True)
    n = models.PositiveIntegerField()
    n_errors = models.PositiveIntegerField()
    tokens = models.FloatField(default=0)
    cell_wall_s = models.FloatField(null=True)
    marks = models.JSONField(
        default=list
    )  # reasons the cell is excluded from peaks, shown on the run page
    labels = models.JSONField(
        default=list
    )  # e.g. "queued beyond max-num-seqs": shown, not excluded
    valid = models.BooleanField()

    class Meta:
        ordering = ["category", "conc"]
        constraints = [
            models.UniqueConstraint(fields=["run", "category", "conc"], name="one_cohort_per_cell")
        ]
