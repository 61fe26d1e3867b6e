"""What the champion tests share: the seed line of Gemma 4 26B-A4B on a single DGX Spark
(33 → 517 → 816 tok/s on coding @ c64) and its challengers as demo jobs, uploads through the real
signing pod client, and reads of the champion APIs over HTTP."""

from dataclasses import replace
from urllib.parse import quote_plus

from demo.bundles import DemoModel, demo_model
from demo.podclient import PodClient
from tests.boardjobs import core_job, read_api, submit_job


def _with_flag(flags: tuple[str, ...], name: str, value: str) -> tuple[str, ...]:
    """The flags with `name`'s value replaced: another recipe of the same line."""
    out = list(flags)
    out[out.index(name) + 1] = value
    return tuple(out)


# The demo catalogue's recipe line (demo-figures): 33 → 517 → 816 tok/s on coding @ c64.
GEMMA_33 = demo_model("gemma-4-26b-a4b-dflash-spark-33")
GEMMA_517 = demo_model("gemma-4-26b-a4b-dflash-spark-517")
GEMMA_816 = demo_model("gemma-4-26b-a4b-dflash-spark")
SEED_LINE = ((GEMMA_33, "2026-10-01T09:00:00Z"), (GEMMA_517, "2026-10-02T09:00:00Z"))
SEED_LINE += ((GEMMA_816, "2026-10-03T09:00:00Z"),)
# The 816 recipe, measured again by another pod at 801 tok/s.
GEMMA_816_AGAIN = demo_model("gemma-4-26b-a4b-dflash-spark-second-pod")

# Faster, but fp8 KV cache costs it 8 points of composite: below the quality floor.
GEMMA_SHORTCUT = replace(
    GEMMA_816,
    key="gemma-4-26b-a4b-fp8-kv-spark",
    flags=_with_flag(GEMMA_816.flags, "--kv-cache-dtype", "fp8"),
    composite=65.7 - 8,
    peak_agg_tps=950.0,
)
GEMMA_1_5_PERCENT = replace(
    GEMMA_816,
    key="gemma-4-26b-a4b-dflash-spark-828",
    flags=_with_flag(GEMMA_816.flags, "--max-num-batched-tokens", "49152"),
    peak_agg_tps=828.0,  # 1.47 % over 816
)
GEMMA_SELF_REPORTED = replace(GEMMA_816, key="gemma-4-26b-a4b-endpoint-spark", peak_agg_tps=1200.0)

QWEN_NEXT = demo_model("qwen3-next-80b-a3b-thinking-nvfp4-spark")  # composite 84.5
QWEN_35B = demo_model("qwen3.6-35b-a3b-heretic-nvfp4-dflash-spark")  # 116 tok/s single-stream
QWEN_27B_MTP = demo_model("qwen3.6-27b-mtp-spark")  # MTP speculation, image off the allowlist
# Gemma-4-12B answering its first token in about 60 ms.
GEMMA_12B_QUICK = replace(
    demo_model("gemma-4-12b-it-k4-fp8-spark"),
    key="gemma-4-12b-it-k4-fp8-spark-quick",
    c1=tuple(
        (cat, d, round(t / 4.6, 1), p)
        for cat, d, t, p in demo_model("gemma-4-12b-it-k4-fp8-spark").c1
    ),
)
RTX_5090 = demo_model("qwen3-14b-fp8-rtx5090")
TWO_RTX_5090 = demo_model("qwen3-32b-fp8-sglang-2x-rtx5090")
H100 = demo_model("gpt-oss-120b-h100")
CPU_ONLY = demo_model("qwen3-4b-instruct-q4km-llamacpp-cpu")


def submit(pod: PodClient, model: DemoModel, started: str, *, endpoint: bool = False) -> str:
    """A text + perf job of `model`; `endpoint` makes it a served endpoint the pod cannot bind
    to the weights (self-reported). Returns the benchmark id."""
    job = core_job(model, started=started)
    if endpoint:
        for _, _, _, bundle in job:
            bundle["recipe"]["serve_mode"] = "endpoint"
    answers = submit_job(pod, job)
    ids = {answer.body["benchmark_id"] for answer in answers}
    assert len(ids) == 1, ids
    return ids.pop()


def submit_seed_line(pod: PodClient) -> list[str]:
    return [submit(pod, model, started) for model, started in SEED_LINE]


def champions(board_url: str, query: str = "") -> list[dict]:
    reply = read_api(board_url, f"/api/v1/champions{query}")
    assert reply.status == 200, reply.text
    return reply.body["champions"]


def crown(board_url: str, slug: str, axis: str, model: str | None = None) -> dict:
    query = f"?hardware={slug}&axis={axis}" + (f"&model={model}" if model else "")
    [found] = champions(board_url, query)
    return found


def pod_champions(pod: PodClient, hardware: str | None = None, model: str | None = None):
    """GET /api/recipes/champions as the pod asks it: its label url-encoded with `+`."""
    params = []
    if hardware is not None:
        params.append(f"hardware={quote_plus(hardware)}")
    if model is not None:
        params.append(f"model={quote_plus(model)}")
    return pod.send("GET", "/api/recipes/champions" + ("?" + "&".join(params) if params else ""))
