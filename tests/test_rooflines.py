"""Model facts, rooflines per cohort and drafter health (docs/cohorts.md §Rooflines, §Drafter
health), and finite numbers everywhere (docs/cohorts.md §Validation).

The pure parts are tested on the published Gemma 4 26B-A4B single-Spark figures; end to end, the
real pod client uploads signed jobs, the weight check reads config.json from the Hub stand-in
through huggingface_hub, and the public API and pages show what came of it.
"""

import copy
import math
from types import SimpleNamespace

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory

from board.hardware import normalise_label
from board.modelfacts import model_facts
from board.models import Benchmark, PerfCohort, Run
from board.perf import CohortMark, PerfRowError, acceptance_of, drafter_health, summarise_perf
from board.roofline import TOLERANCE, evaluate
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID, TEXT_SUITE_ID, hub_facts_of, job_bundles
from demo.catalogue import ALL_DEMO_MODELS
from recipes.normalise import normalise_recipe
from submissions.models import WeightCheckCache
from tests.boardjobs import benchmark_of, core_job, put_on_hub, read_api, submit_job
from tests.championjobs import pod_champions

GEMMA = DEMO_MODELS[0]  # Gemma 4 26B-A4B, DFlash n=11, single DGX Spark (273 GB/s)
assert GEMMA.hf_repo == "google/gemma-4-26B-A4B-it"
GEMMA_BYTES, GEMMA_CONFIG = hub_facts_of(GEMMA.hf_repo)
SPARK_GBS = 273.0


def cell(label, conc, aggregate, decode, ttft, tpot=None):
    return SimpleNamespace(
        label=label,
        conc=conc,
        aggregate_tps=aggregate,
        decode_tps_mean=decode,
        ttft_ms_p50=ttft,
        tpot_ms_p50=tpot,
    )


def gemma_roofline(cohorts, drafter=None, facts=None):
    facts = facts or model_facts(GEMMA_CONFIG, GEMMA_BYTES, GEMMA.hf_repo)
    return evaluate(facts, bandwidth_gbs=SPARK_GBS, devices=1, drafter=drafter, cohorts=cohorts)


DFLASH_10 = {"method": "dflash", "repo": None, "revision": None, "n": 10}


# --- model facts -------------------------------------------------------------------------------


def test_gemma_4_moe_facts_come_from_the_nested_text_config():
    facts = model_facts(GEMMA_CONFIG, GEMMA_BYTES, GEMMA.hf_repo)

    assert (facts.known, facts.kind, facts.source) == (True, "moe", "config")
    assert facts.total_params == pytest.approx(25.2e9, rel=0.01)
    assert facts.active_params == pytest.approx(3.75e9, rel=0.01)
    assert (facts.experts, facts.experts_per_token) == (128, 8)
    assert facts.bytes_per_param == pytest.approx(GEMMA_BYTES / facts.total_params)
    assert facts.active_bytes == pytest.approx(2.8e9, rel=0.01)  # the "~2.8 GB active"


def test_the_common_moe_shapes_give_their_published_parameter_counts():
    mixtral = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "intermediate_size": 14336,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "tie_word_embeddings": False,
    }
    qwen_moe = {
        "hidden_size": 2048,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "intermediate_size": 6144,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "tie_word_embeddings": False,
    }
    deepseek_v3 = {
        "hidden_size": 7168,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "vocab_size": 129280,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "tie_word_embeddings": False,
    }
    gpt_oss = {**hub_facts_of("openai/gpt-oss-120b")[1]}
    expected = [  # (config, total, active) in billions: Mixtral 8x7B, Qwen3-30B-A3B, V3, 120b
        (mixtral, 46.7, 12.9),
        (qwen_moe, 30.5, 3.3),
        (deepseek_v3, 671, 37),
        (gpt_oss, 116.8, 5.1),
    ]
    for config, total, active in expected:
        facts = model_facts(config, int(total * 0.6e9), "org/x")
        assert facts.kind == "moe"
        assert facts.total_params / 1e9 == pytest.approx(total, rel=0.03)
        assert facts.active_params / 1e9 == pytest.approx(active, rel=0.15)


def test_a_dense_model_reads_every_byte_and_the_name_is_only_a_fallback():
    dense = model_facts(hub_facts_of("Qwen/Qwen3-14B-FP8")[1], 16_300_000_000, "Qwen/Qwen3-14B-FP8")
    assert dense.kind == "dense" and dense.active_params == dense.total_params
    assert dense.active_bytes == pytest.approx(16_300_000_000)

    named = model_facts(None, 17_000_000_000, "mlx-community/Qwen3-30B-A3B-4bit")
    assert (named.known, named.source, named.total_params, named.active_params) == (
        True,
        "name",
        30_000_000_000,
        3_000_000_000,
    )
    assert not model_facts({"architectures": ["Mystery"]}, 10**10, "org/mystery").known
    dense_config = hub_facts_of("Qwen/Qwen3-14B-FP8")[1]
    assert not model_facts({**dense_config, "num_experts": 64}, 10**10, "org/x").known
    # Config and bytes that cannot both be true: unknown, never a bound.
    assert not model_facts(GEMMA_CONFIG, 1_000_000, GEMMA.hf_repo).known


# --- rooflines ----------------------------------------------------------------------------------


def test_the_published_spark_figures_stay_within_their_rooflines():
    stock = gemma_roofline(
        [cell("coding @ c1", 1, 46.5, 48.0, 95, 20.5), cell("coding @ c64", 64, 816, 14.2, 23000)]
    )
    assert stock.single_stream_tps == pytest.approx(97.5, rel=0.02)  # 273 GB/s ÷ ~2.8 GB
    assert (stock.status, stock.breaches) == ("within", ())
    assert stock.aggregate_bounds["coding @ c64"] < 64 * stock.single_stream_tps  # experts touched

    dflash = gemma_roofline(
        [cell("coding @ c1", 1, 148, 155.8, 83, 6.4), cell("coding @ c64", 64, 1937, 30.3, 21000)],
        drafter=DFLASH_10,
    )
    assert (dflash.status, dflash.breaches) == ("within", ())
    assert dflash.tokens_per_step == 11
    assert dflash.single_stream_tps == pytest.approx(11 * stock.single_stream_tps)


def test_figures_several_times_beyond_their_bounds_are_marked_with_claim_bound_and_derivation():
    no_drafter = gemma_roofline(
        [
            cell("coding @ c1", 1, 380, 400, 0.5, 2.5),  # one stream ×4, TTFT 0.5 ms
            cell("coding @ c64", 64, 20_000, 320, 21000),  # aggregate ×20
        ]
    )
    figures = {(b.cohort, b.figure) for b in no_drafter.breaches}
    assert figures == {
        ("coding @ c1", "decode tok/s per stream"),
        ("coding @ c1", "aggregate tok/s"),
        ("coding @ c1", "TTFT p50 ms"),
        ("coding @ c1", "TPOT p50 ms"),
        ("coding @ c64", "decode tok/s per stream"),
        ("coding @ c64", "aggregate tok/s"),
    }
    aggregate = next(
        b for b in no_drafter.breaches if b.figure == "aggregate tok/s" and "64" in b.cohort
    )
    assert aggregate.claim == 20_000 and aggregate.bound < 1_000
    assert "273 GB/s" in aggregate.derivation and "of the experts" in aggregate.derivation
    assert "20,000 is beyond its roofline" in aggregate.text

    with_drafter = gemma_roofline([cell("coding @ c1", 1, 4000, 4200, 80, 0.24)], DFLASH_10)
    assert {b.figure for b in with_drafter.breaches} >= {"decode tok/s per stream"}


def test_a_dense_bound_uses_all_its_bytes_and_unknown_facts_give_no_bound():
    dense_config = hub_facts_of("Qwen/Qwen3-14B-FP8")[1]
    facts = model_facts(dense_config, 16_300_000_000, "Qwen/Qwen3-14B-FP8")
    roofline = evaluate(
        facts,
        bandwidth_gbs=1792,
        devices=1,
        drafter=None,
        cohorts=[cell("coding @ c1", 1, 88, 90, 50)],
    )
    assert roofline.single_stream_tps == pytest.approx(1792e9 / 16_300_000_000)
    assert roofline.aggregate_bounds["coding @ c1"] == pytest.approx(roofline.single_stream_tps)

    unknown = gemma_roofline(
        [cell("coding @ c64", 64, 20_000, 320, 0.5)], facts=model_facts({}, 10**10, "org/x")
    )
    assert (unknown.status, unknown.breaches, unknown.single_stream_tps) == ("unknown", (), None)
    assert unknown.note.startswith("no bound")
    no_bandwidth = evaluate(
        facts, bandwidth_gbs=None, devices=1, drafter=None, cohorts=[cell("x @ c1", 1, 1e9, 1e9, 0)]
    )
    assert (no_bandwidth.status, no_bandwidth.breaches) == ("unknown", ())
    assert TOLERANCE == 1.5


# --- the demo's own figures ------------------------------------------------------------------


def demo_roofline(model):
    """The roofline the board gives the demo's perf run of `model`, on its own hardware class."""
    job = job_bundles(model, with_agentic=False)
    perf = next(bundle for _, suite, _, bundle in job if suite == PERF_SUITE_ID)
    summary = summarise_perf(perf["results"], model.max_num_seqs)
    hardware = normalise_label(model.detected_label)
    spec = normalise_recipe(perf["recipe"])
    weight_bytes, config = hub_facts_of(model.hf_repo)
    facts = model_facts(config, weight_bytes, model.hf_repo)
    roofline = evaluate(
        facts,
        bandwidth_gbs=hardware.memory_bandwidth_gbs,
        devices=hardware.device_count,
        drafter=spec.drafter if spec else None,
        cohorts=summary.cohorts,
    )
    return facts, roofline, summary.cohorts


@pytest.mark.parametrize("model", ALL_DEMO_MODELS, ids=lambda model: model.key)
def test_every_demo_model_has_facts_and_every_demo_figure_lies_within_its_roofline(model):
    """The demo pre-fills facts for every model it serves (demo/data/hub_facts.json), and its
    figures are physically plausible: no cohort beyond its bound, not even within the tolerance
    for one stream, so the demo board ranks every benchmark with no beyond_roofline mark."""
    facts, roofline, cohorts = demo_roofline(model)

    assert facts.known and facts.source == "config", facts.note
    assert 0.5 <= facts.bytes_per_param <= 2.5
    assert roofline.breaches == ()
    if normalise_label(model.detected_label).memory_bandwidth_gbs is None:  # the CPU box
        assert roofline.status == "unknown"
        return
    assert roofline.status == "within"
    for cohort in cohorts:  # one stream under the bound itself, no tolerance needed
        assert cohort.decode_tps_mean <= roofline.single_stream_tps, cohort.label
    assert model.single_stream_tps <= roofline.single_stream_tps


def test_the_dense_demo_models_once_faster_than_their_bytes_now_decode_within_them():
    """Qwen3.6-27B in bf16 and the two Gemma 4 12B builds used to claim speeds their weights
    cannot be read at on a Spark (273 GB/s): they had no facts so nothing bounded them."""
    models = {m.key: m for m in ALL_DEMO_MODELS}
    for key, single_stream_bound in (
        ("qwen3.6-27b-mtp-spark", 273 / 53.8 * 3),  # MTP n=2: 3 tokens per step
        ("gemma-4-12b-it-k4-fp8-spark", 273 / 12.5),
        ("gemma-4-12b-it-nvfp4-fp8-spark", 273 / 7.8),
    ):
        facts, roofline, _ = demo_roofline(models[key])
        assert facts.kind == "dense" and facts.active_bytes == pytest.approx(facts.weight_bytes)
        assert roofline.single_stream_tps == pytest.approx(single_stream_bound)
        assert 0.5 < models[key].single_stream_tps / single_stream_bound < 0.9, key


# --- drafter health -----------------------------------------------------------------------------


def sustained(low, high, timeline=()):
    return {
        "perf.sustained.summary": {"accept_at_low_kv": low, "accept_at_high_kv": high},
        "perf.sustained.timeline": {"points": [{"spec_accept_pct": v} for v in timeline]},
    }


def test_a_drafter_under_the_threshold_is_barely_accepting_and_a_healthy_one_is_not():
    drafter = {"method": "dflash", "n": 11}
    barely = drafter_health(acceptance_of(sustained(0.3, 0.2)), drafter)
    assert barely["status"] == "barely_accepting" and barely["acceptance_pct"] == 0.3
    healthy = drafter_health(acceptance_of(sustained(71.2, 69.8)), drafter)
    assert (healthy["status"], healthy["acceptance_pct"]) == ("healthy", 71.2)
    from_timeline = drafter_health(acceptance_of(sustained(None, None, [0.5, 0.1])), drafter)
    assert from_timeline["status"] == "barely_accepting"
    assert drafter_health(acceptance_of(sustained(0.3, 0.2)), None) == {"status": "none"}
    assert drafter_health(acceptance_of({}), drafter)["status"] == "unknown"
    assert acceptance_of(sustained(math.inf, "71", [-3, 250])) == {}


# --- finite numbers -----------------------------------------------------------------------------


def perf_rows():
    [perf] = [b for board, _, _, b in core_job(GEMMA) if board == "perf"]
    return perf["results"]


def test_an_aggregate_that_overflows_is_marked_not_finite_and_stays_finite():
    rows = perf_rows()
    evidence = next(r for r in rows if r["case_id"] == "perf.direct.coding.c64")["evidence"]
    evidence["cell_wall_s"] = 5e-324  # tokens ÷ wall = inf
    summary = summarise_perf(rows)

    cohort = next(c for c in summary.cohorts if c.label == "coding @ c64")
    assert CohortMark.NOT_FINITE in cohort.marks and not cohort.valid
    assert math.isfinite(cohort.aggregate_tps) and cohort.aggregate_tps == 816.0
    assert summary.peak is not None and summary.peak.label != "coding @ c64"


def test_a_number_too_large_to_measure_is_refused_with_its_pointer():
    rows = perf_rows()
    rows[0]["evidence"]["engine_tokens_total"] = 10**400
    with pytest.raises(PerfRowError) as caught:
        summarise_perf(rows)
    assert caught.value.pointer == "/results/0/evidence/engine_tokens_total"


# --- end to end ---------------------------------------------------------------------------------


def perf_of(job):
    return next(bundle for board, _, _, bundle in job if board == "perf")


def set_cell(job, case_id, *, aggregate=None, decode=None, ttft=None, tpot=None):
    """Rewrite one direct cell so that it passes rules 2–4 and claims these figures."""
    row = next(r for r in perf_of(job)["results"] if r["case_id"] == case_id)
    evidence = row["evidence"]
    if decode is not None:
        evidence["decode_tps_mean"] = decode
    if aggregate is not None:
        evidence["agg_decode_tps"] = aggregate
        evidence["engine_tokens_total"] = aggregate * evidence["cell_wall_s"]
        evidence["output_tokens_total"] = round(aggregate * evidence["cell_wall_s"])
        evidence["decode_tps_mean"] = max(evidence["decode_tps_mean"], aggregate / evidence["conc"])
    if ttft is not None:
        evidence["ttft_ms_p50"] = ttft
    if tpot is not None:
        evidence["tpot_ms_p50"] = tpot


def without_drafter(job):
    """The same job served stock: no speculative config, no drafter keys."""
    for _, _, _, bundle in job:
        recipe = bundle["recipe"]
        for key in list(recipe):
            if key.startswith(("drafter", "spec_decode")):
                del recipe[key]
        for key in ("flags", "command"):
            argv = recipe.get(key)
            if isinstance(argv, list) and "--speculative-config" in argv:
                at = argv.index("--speculative-config")
                del argv[at : at + 2]
        recipe["custom_flags"] = [
            f for f in recipe.get("custom_flags", []) if not f.startswith("--speculative")
        ]
        recipe["docker_run"] = recipe.get("docker_run", "").split(" --speculative-config")[0]
    return job


def upload(pod, job):
    answers = submit_job(pod, job)
    assert {a.body["verification"] for a in answers} == {"verified"}
    return answers


def detail_of(board_url, answers):
    benchmark = benchmark_of(board_url, answers)
    cohorts = {c["label"]: c for c in benchmark["cohorts"]}
    return benchmark, cohorts


def crowned_ids(board_url):
    champions = read_api(board_url, "/api/v1/champions?hardware=dgx-spark-x1").body["champions"]
    return {crown["benchmark_id"] for crown in champions if crown}


@pytest.mark.django_db
def test_the_published_job_ranks_with_its_percent_of_roofline_and_no_mark(pod, hub, board_url):
    put_on_hub(hub, GEMMA)

    answers = upload(pod, core_job(GEMMA))

    benchmark, cohorts = detail_of(board_url, answers)
    assert benchmark["ranked"] is True
    assert "beyond_roofline" not in benchmark["badges"]
    roofline = benchmark["roofline"]
    assert roofline["status"] == "within" and roofline["breaches"] == []
    assert roofline["tokens_per_step"] == 12  # DFlash n=11
    assert roofline["single_stream_pct"] == pytest.approx(
        100 * GEMMA.single_stream_tps / roofline["single_stream_tps"], rel=1e-6
    )
    assert all("beyond_roofline" not in c["marks"] for c in cohorts.values())
    assert benchmark["drafter"]["status"] == "healthy"
    assert benchmark["id"] in crowned_ids(board_url)
    facts = Run.objects.get(run_id=answers[-1].body["run_id"]).model_facts
    assert (facts["known"], facts["weight_bytes"], facts["kind"]) == (True, GEMMA_BYTES, "moe")
    # Cached per commit with the weights' answer: config.json was read once.
    cached = WeightCheckCache.objects.get(repo=GEMMA.hf_repo, commit=GEMMA.hf_revision)
    assert (cached.config_state, cached.weight_bytes) == ("found", GEMMA_BYTES)

    page = read_api(board_url, f"/benchmarks/{benchmark['id']}/").text
    assert "% of roofline" in page and "accepts" in page
    hardware = read_api(board_url, "/hardware/dgx-spark-x1/").text
    assert "% of roofline" in hardware


def hostile_jobs():
    """Cohorts several times beyond their bounds, each job a benchmark of its own."""
    aggregate = without_drafter(core_job(GEMMA, started="2026-11-03T10:00:00Z"))
    set_cell(aggregate, "perf.direct.coding.c64", aggregate=20_000)  # no drafter, c64
    stock_stream = without_drafter(core_job(GEMMA, started="2026-11-04T10:00:00Z"))
    for category in ("math", "instruction", "reasoning", "coding", "prose"):
        set_cell(stock_stream, f"perf.direct.{category}.c1", aggregate=390, decode=400)
    drafted_stream = core_job(GEMMA, started="2026-11-05T10:00:00Z")
    set_cell(drafted_stream, "perf.direct.coding.c1", aggregate=4_900, decode=5_000)
    fast_first_token = core_job(GEMMA, started="2026-11-06T10:00:00Z")
    set_cell(fast_first_token, "perf.direct.math.c1", ttft=0.5)
    return {
        "aggregate far beyond, no drafter": (aggregate, "coding @ c64"),
        "one stream ×4, no drafter": (stock_stream, "prose @ c1"),
        "one stream ×4, DFlash": (drafted_stream, "coding @ c1"),
        "TTFT 0.5 ms": (fast_first_token, "math @ c1"),
    }


@pytest.mark.django_db
def test_cohorts_beyond_their_bounds_are_marked_unranked_uncrowned_and_never_handed_to_pods(
    make_pod, hub, board_url
):
    put_on_hub(hub, GEMMA)
    [honest, *_] = upload(make_pod(), core_job(GEMMA))
    hostile = {}
    for name, (job, label) in hostile_jobs().items():
        hostile[name] = (detail_of(board_url, upload(make_pod(), job)), label)

    crowned = crowned_ids(board_url)
    handed = {entry["run"] for entry in pod_champions(make_pod()).body["champions"]}
    honest_perf = Benchmark.objects.get(public_id=honest.body["benchmark_id"]).perf_run_id
    assert handed == {honest_perf}  # the honest job holds the crown a 20,000 tok/s claim would
    assert honest.body["benchmark_id"] in crowned
    for name, ((benchmark, cohorts), label) in hostile.items():
        assert benchmark["ranked"] is False, name
        assert "beyond_roofline" in benchmark["badges"], name
        assert "beyond_roofline" in cohorts[label]["marks"] and not cohorts[label]["valid"], name
        assert label in benchmark["roofline"]["headline_beyond"], name
        assert any(text.startswith(label) for text in benchmark["roofline"]["breaches"]), name
        assert benchmark["id"] not in crowned, name
        perf_run = Benchmark.objects.get(public_id=benchmark["id"]).perf_run_id
        assert perf_run not in handed, name

    page = read_api(board_url, f"/benchmarks/{hostile['TTFT 0.5 ms'][0][0]['id']}/").text
    assert "is under its floor" in page and "Not ranked" in page
    # Listed for moderators.
    admin = site._registry[Benchmark]
    request = RequestFactory().get("/admin/board/benchmark/", {"physics": "beyond_roofline"})
    (physics,) = [f for f in admin.list_filter if not isinstance(f, str)]
    listed = physics(request, {"physics": ["beyond_roofline"]}, Benchmark, admin).queryset(
        request, Benchmark.objects.all()
    )
    assert {b.public_id for b in listed} == {b["id"] for (b, _), _ in hostile.values()}


@pytest.mark.django_db
def test_an_unknown_architecture_gets_no_bound_and_no_mark(pod, hub, board_url):
    # A name without -{total}B-A{active}B, so the name cannot stand in for the config either.
    qwen = next(m for m in DEMO_MODELS if m.key == "qwen3-14b-fp8-rtx5090")
    put_on_hub(hub, qwen, config={"architectures": ["SomethingNew"], "model_type": "new"})
    job = core_job(qwen)
    set_cell(job, "perf.direct.coding.c64", aggregate=20_000)

    benchmark, cohorts = detail_of(board_url, upload(pod, job))

    assert benchmark["roofline"]["status"] == "unknown"
    assert "architecture unknown" in benchmark["roofline"]["note"]
    assert "beyond_roofline" not in benchmark["badges"]
    assert all("beyond_roofline" not in c["marks"] for c in cohorts.values())
    assert benchmark["ranked"] is True
    assert "No bound" in read_api(board_url, f"/benchmarks/{benchmark['id']}/").text


@pytest.mark.django_db
def test_a_drafter_barely_accepting_is_marked_with_its_figure(pod, hub, board_url):
    put_on_hub(hub, GEMMA)
    job = core_job(GEMMA)
    rows = perf_of(job)["results"]
    summary = next(r for r in rows if r["case_id"] == "perf.sustained.summary")["evidence"]
    summary.update(accept_at_low_kv=0.3, accept_at_high_kv=0.2)

    benchmark, _ = detail_of(board_url, upload(pod, job))

    assert "drafter_barely_accepting" in benchmark["badges"]
    assert benchmark["drafter"]["status"] == "barely_accepting"
    assert benchmark["drafter"]["acceptance_pct"] == 0.3
    page = read_api(board_url, f"/benchmarks/{benchmark['id']}/").text
    assert "barely accepting" in page and "0.3 %" in page
    recipe_id = Benchmark.objects.get(public_id=benchmark["id"]).recipe_id
    recipe_page = read_api(board_url, f"/recipes/{recipe_id}/").text
    assert "barely accepting" in recipe_page


@pytest.mark.django_db
def test_an_infinite_aggregate_is_an_invalid_cohort_never_a_500(pod, hub, board_url):
    """Runs on PostgreSQL and on SQLite (the embedded default: run the file without
    DATABASE_URL)."""
    put_on_hub(hub, GEMMA)
    job = copy.deepcopy(core_job(GEMMA))
    row = next(r for r in perf_of(job)["results"] if r["case_id"] == "perf.direct.coding.c64")
    row["evidence"]["cell_wall_s"] = 5e-324

    answers = upload(pod, job)

    reply = read_api(board_url, f"/api/v1/benchmarks/{answers[0].body['benchmark_id']}")
    assert reply.status == 200, reply.text
    coding = next(c for c in reply.body["cohorts"] if c["label"] == "coding @ c64")
    assert "not_finite" in coding["marks"] and coding["valid"] is False
    assert math.isfinite(coding["aggregate_tps"])
    assert reply.body["peak_aggregate"]["cohort"] != "coding @ c64"
    stored = PerfCohort.objects.get(run__run_id=answers[-1].body["run_id"], label="coding @ c64")
    assert math.isfinite(stored.aggregate_tps) and math.isfinite(stored.stream_ceiling_tps)
    for path in (f"/benchmarks/{reply.body['id']}/", f"/runs/{answers[-1].body['run_id']}/"):
        assert read_api(board_url, path).status == 200


@pytest.mark.django_db
def test_a_number_beyond_measure_is_refused_400_at_the_edge(pod, hub):
    put_on_hub(hub, GEMMA)
    job = core_job(GEMMA)
    perf_of(job)["results"][0]["evidence"]["agg_decode_tps"] = 1e300
    board, suite_id, model, bundle = next(entry for entry in job if entry[0] == "perf")

    answer = pod.submit_run(model, suite_id, board, bundle)

    assert answer.status == 400, answer.body
    assert answer.body["reason"] == "SCHEMA_INVALID"
    assert "/results/0/evidence/agg_decode_tps" in answer.body["note"]


assert TEXT_SUITE_ID and PERF_SUITE_ID  # the jobs above are the demo's text and perf bundles
