"""What pods are handed is safe (docs/recipes.md §The serve-flag policy, docs/champions.md §The
champion recipes pods fetch): a benchmark whose recipe loads code, reaches the network, carries an
unknown flag or an unverified drafter is still crowned and shown, with its warning, but is never
in the pods' list nor in any copyable command; the pods' entry for its class and model is the
next recipe that passes the policy. Driven through the real pod client and read over HTTP."""

import html
import json
import re
from dataclasses import replace

import pytest

from demo.loader import prefill_hub_cache
from tests.boardjobs import core_job, read_api, submit_job
from tests.championjobs import GEMMA_816, pod_champions, submit

pytestmark = pytest.mark.django_db

SINGLE_SPARK = "single DGX Spark (GB10)"
GEMMA = "google/gemma-4-26b-a4b-it"

# (family, flags added to the 816 recipe, what must never reach a pod or a command, reason code)
FAMILIES = [
    ("trust-remote-code", ("--trust-remote-code",), "--trust-remote-code", "refused_flag"),
    (
        "tokenizer of another repo",
        ("--tokenizer", "evil-org/tokenizer"),
        "evil-org/tokenizer",
        "refused_flag",
    ),
    (
        "hf-overrides with auto_map",
        ("--hf-overrides", '{"auto_map": {"AutoModelForCausalLM": "evil-org/code--m.M"}}'),
        "auto_map",
        "refused_flag",
    ),
    (
        "chat template URL",
        ("--chat-template", "https://evil.example/t.jinja"),
        "evil.example",
        "refused_flag",
    ),
    (
        "worker extension class",
        ("--worker-extension-cls", "evil_ext.Worker"),
        "evil_ext",
        "refused_flag",
    ),
    ("unknown flag", ("--frobnicate-kernels", "7"), "--frobnicate-kernels", "unknown_flag"),
]


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def copyable(page: str) -> str:
    """Everything a reader can copy from a page: its command blocks, unescaped."""
    blocks = re.findall(r'<div class="command">(.*?)</div>', page, flags=re.DOTALL)
    return html.unescape("\n".join(blocks))


def crowns_of(board_url: str) -> dict:
    reply = read_api(
        board_url, f"/api/v1/champions?hardware=dgx-spark-x1&axis=throughput&model={GEMMA}"
    )
    [crown] = reply.body["champions"]
    return crown


def assert_crowned_shown_and_never_handed(pod, board_url, safe, holder, token, code):
    crown = crowns_of(board_url)
    assert crown["benchmark_id"] == holder  # crowned: the policy never moves a crown
    assert crown["one_click"] is False
    assert code in {reason["code"] for reason in crown["one_click_reasons"]}
    assert crown["pods_offered"]["benchmark_id"] == safe

    answer = pod_champions(pod, SINGLE_SPARK)
    [entry] = [e for e in answer.body["champions"] if e["canonical"] == GEMMA]
    assert entry["benchmark_id"] == safe  # the next safe recipe
    assert entry["peak_agg_tps"] == 816.0
    assert entry["crown_holder"]["benchmark_id"] == holder
    assert code in {r["code"] for r in entry["crown_holder"]["not_offered_because"]}
    assert token not in json.dumps([e["serve_flags"] for e in answer.body["champions"]])

    page = read_api(board_url, f"/benchmarks/{holder}/")
    assert page.status == 200
    assert "not one-click" in page.text
    assert "Pods are never handed this recipe as it stands" in page.text
    assert token in html.unescape(page.text)  # shown, with its warning
    assert token not in copyable(page.text)
    assert f'handed the recipe of <a href="/benchmarks/{safe}/">' in page.text

    detail = read_api(board_url, f"/api/v1/benchmarks/{holder}").body
    assert detail["one_click"]["one_click"] is False
    recipe_id = crown["recipe_id"]
    recipe = read_api(board_url, f"/api/v1/recipes/{recipe_id}").body
    assert recipe["one_click"]["one_click"] is False
    for commands in recipe["commands"]:
        for key in ("docker_run", "compose", "bare_metal"):
            assert token not in (commands[key] or ""), key
    recipe_page = read_api(board_url, f"/recipes/{recipe_id}/").text
    assert "not one-click" in recipe_page
    assert token not in copyable(recipe_page)

    # The safe one is one-click and says so.
    safe_page = read_api(board_url, f"/benchmarks/{safe}/").text
    assert "Pods can apply this recipe in one click" in safe_page


@pytest.mark.parametrize(
    ("family", "extra", "token", "code"), FAMILIES, ids=[f[0] for f in FAMILIES]
)
def test_a_dangerous_or_unknown_flag_is_crowned_shown_never_handed_out(
    pod, board_url, family, extra, token, code
):
    safe = submit(pod, GEMMA_816, "2026-10-01T09:00:00Z")
    hostile = replace(
        GEMMA_816, key=f"gemma-hostile-{code}", flags=GEMMA_816.flags + extra, peak_agg_tps=950.0
    )
    holder = submit(pod, hostile, "2026-10-02T09:00:00Z")

    assert_crowned_shown_and_never_handed(pod, board_url, safe, holder, token, code)


def test_an_unverified_drafter_is_crowned_shown_never_handed_out(pod, board_url):
    safe = submit(pod, GEMMA_816, "2026-10-01T09:00:00Z")
    unpinned = replace(GEMMA_816, key="gemma-unpinned-drafter", peak_agg_tps=950.0)
    job = core_job(unpinned, started="2026-10-02T09:00:00Z")
    for _, _, _, bundle in job:
        bundle["recipe"]["drafter_revision"] = "main"  # no commit: nobody can check it
    [holder] = {answer.body["benchmark_id"] for answer in submit_job(pod, job)}

    assert_crowned_shown_and_never_handed(
        pod, board_url, safe, holder, '"model":"/drafter"', "drafter_unverified"
    )
    page = read_api(board_url, f"/benchmarks/{holder}/").text
    assert "drafter not verified" in page
    assert "huggingface-cli" in copyable(page)  # the model's download is still offered
    assert "gemma-4-26B-A4B-it-DFlash" not in copyable(page)  # the drafter's is not


def test_with_no_safe_recipe_the_model_has_no_entry_for_pods(pod, board_url):
    hostile = replace(GEMMA_816, flags=GEMMA_816.flags + ("--trust-remote-code",))
    holder = submit(pod, hostile, "2026-10-02T09:00:00Z")

    assert pod_champions(pod, SINGLE_SPARK).body == {"hardwares": [], "champions": []}
    crown = crowns_of(board_url)
    assert (crown["benchmark_id"], crown["one_click"], crown["pods_offered"]) == (
        holder,
        False,
        None,
    )
    cards = read_api(board_url, "/hardware/dgx-spark-x1/").text
    assert "not one-click" in cards
