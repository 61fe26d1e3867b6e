"""The weight check (docs/trust-and-ranking.md §The weight check) against a local Hub stand-in, through the real huggingface_hub client.

No Django and no database: `submissions.weights` is plain logic plus one Hub call.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator

import pytest

from board.revisions import resolve_commit
from submissions.weights import (
    RETRY_WINDOW_SECONDS,
    WEIGHT_EXTENSIONS,
    FileDifference,
    HubRefused,
    HubUnavailable,
    Verdict,
    WeightCheck,
    backoff_seconds,
    compare_weights,
    fetch_hub_answer,
    weights_hash_of,
)
from tests.hf_standin import HubStandIn
from tests.processes import free_port

REPO = "google/gemma-4-26B-A4B-it"
COMMIT = "b7e2c1d94f3a5e6b8c0d1f2a3b4c5d6e7f8a9b0c"
OTHER_COMMIT = "1111111111111111111111111111111111111111"
# From tests/fixtures/examples/perf-final.json, as a pod computed them.
PER_FILE = {
    "model-00001-of-00004.safetensors": "5f0c3b9e2a7d41c68e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90123456789ab",
    "model-00002-of-00004.safetensors": "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9",
    "model-00003-of-00004.safetensors": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "model-00004-of-00004.safetensors": "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
}
WEIGHTS_HASH = "4b0c38136d9abfce4f6e13071ea6f55e5a8c9b13d9ac60cc9710d2d01ec68e7e"
NON_WEIGHT_FILES = {
    "config.json": None,
    "generation_config.json": None,
    "tokenizer.json": "c" * 64,  # big tokenizers live in LFS too
    "tokenizer_config.json": None,
    "tokenizer.model": "d" * 64,
    "README.md": None,
    ".gitattributes": None,
}

DRAFTER = "z-lab/gemma-4-26B-A4B-it-DFlash"
DRAFTER_COMMIT = "4c1f0e9d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d"

GGUF_REPO = "unsloth/gemma-4-26B-A4B-it-GGUF"
GGUF_COMMIT = "2222222222222222222222222222222222222222"


def sha(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


GGUF_FILES = {
    "Q8_0/gemma-4-26B-A4B-it-Q8_0-00001-of-00003.gguf": sha("q8-1"),
    "Q8_0/gemma-4-26B-A4B-it-Q8_0-00002-of-00003.gguf": sha("q8-2"),
    "Q8_0/gemma-4-26B-A4B-it-Q8_0-00003-of-00003.gguf": sha("q8-3"),
    "gemma-4-26B-A4B-it-Q4_K_M.gguf": sha("q4"),
    "mmproj-F16.gguf": sha("mmproj"),
}


@pytest.fixture
def hub() -> Iterator[HubStandIn]:
    with HubStandIn() as standin:
        standin.add_repo(REPO, COMMIT, {**PER_FILE, **NON_WEIGHT_FILES}, branches={"main": COMMIT})
        standin.add_repo(DRAFTER, DRAFTER_COMMIT, {"model.safetensors": sha("drafter")})
        standin.add_repo(GGUF_REPO, GGUF_COMMIT, {**GGUF_FILES, "README.md": None})
        yield standin


def check(hub: HubStandIn, *, repo: str = REPO, commit: str = COMMIT, per_file=None, declared=None):
    per_file = PER_FILE if per_file is None else per_file
    declared = weights_hash_of(per_file) if declared is None else declared
    answer = fetch_hub_answer(repo, commit, endpoint=hub.endpoint, token=None)
    return compare_weights(declared_hash=declared, per_file=per_file, hub=answer)


def model_info_path(repo: str, revision: str) -> str:
    return f"/api/models/{repo}/revision/{revision}?blobs=true"


# -- the declared hash -----------------------------------------------------------------------


def test_weights_hash_recomputes_the_pods_example_bundle() -> None:
    assert weights_hash_of(PER_FILE) == WEIGHTS_HASH


def test_it_flags_a_weights_hash_that_does_not_recompute(hub: HubStandIn) -> None:
    result = check(hub, declared="0" * 64)

    assert result.verdict is Verdict.MISMATCH
    assert result.differences == ()
    assert "weights_hash does not recompute from weights_per_file" in result.note


# -- files against the Hub -------------------------------------------------------------------


def test_it_verifies_weights_that_match_the_hub(hub: HubStandIn) -> None:
    result = check(hub, declared=WEIGHTS_HASH)

    assert result == WeightCheck(
        verdict=Verdict.VERIFIED,
        commit=COMMIT,
        differences=(),
        note=f"4 weight file(s) match the Hub at {COMMIT}.",
    )
    assert hub.requests == [("GET", model_info_path(REPO, COMMIT))]


def test_it_ignores_config_and_tokenizer_files_on_the_hub(hub: HubStandIn) -> None:
    answer = fetch_hub_answer(REPO, COMMIT, endpoint=hub.endpoint, token=None)

    assert (answer.commit, answer.files) == (COMMIT, dict(PER_FILE))
    assert all(path.endswith(WEIGHT_EXTENSIONS) for path in answer.files)


def test_it_names_the_file_whose_hash_differs(hub: HubStandIn) -> None:
    tampered = {**PER_FILE, "model-00003-of-00004.safetensors": sha("tampered")}

    result = check(hub, per_file=tampered)

    assert result.verdict is Verdict.MISMATCH
    assert result.differences == (
        FileDifference(
            path="model-00003-of-00004.safetensors",
            kind="hash_differs",
            declared=sha("tampered"),
            hub=PER_FILE["model-00003-of-00004.safetensors"],
        ),
    )
    assert "model-00003-of-00004.safetensors (hash differs)" in result.note


def test_it_lists_an_extra_shard_on_the_hub_and_a_missing_one(hub: HubStandIn) -> None:
    hub.add_repo(
        "org/resharded",
        OTHER_COMMIT,
        {
            "model-00001-of-00003.safetensors": sha("1"),
            "model-00002-of-00003.safetensors": sha("2"),
            "model-00003-of-00003.safetensors": sha("3"),
        },
    )
    declared = {
        "model-00001-of-00003.safetensors": sha("1"),
        "model-00002-of-00003.safetensors": sha("2"),
        "model-00004-of-00003.safetensors": sha("4"),
    }

    result = check(hub, repo="org/resharded", commit=OTHER_COMMIT, per_file=declared)

    assert result.verdict is Verdict.MISMATCH
    assert result.differences == (
        FileDifference("model-00003-of-00003.safetensors", "extra_on_hub", None, sha("3")),
        FileDifference("model-00004-of-00003.safetensors", "missing_on_hub", sha("4"), None),
    )


def test_a_weight_file_outside_lfs_counts_but_its_hash_is_not_compared(hub: HubStandIn) -> None:
    hub.add_repo("org/tiny", OTHER_COMMIT, {"pytorch_model.bin": None, "config.json": None})

    result = check(
        hub, repo="org/tiny", commit=OTHER_COMMIT, per_file={"pytorch_model.bin": sha("x")}
    )

    assert result.verdict is Verdict.VERIFIED
    assert "1 not stored in Git LFS" in result.note


def test_a_run_that_declares_no_weight_files_is_a_mismatch(hub: HubStandIn) -> None:
    result = check(hub, per_file={}, declared=weights_hash_of({}))

    assert result.verdict is Verdict.MISMATCH
    assert "declares no weight files" in result.note
    assert {d.kind for d in result.differences} == {"extra_on_hub"}


# -- GGUF repos ------------------------------------------------------------------------------


def test_a_gguf_run_may_declare_one_complete_split_group(hub: HubStandIn) -> None:
    q8 = {path: digest for path, digest in GGUF_FILES.items() if path.startswith("Q8_0/")}

    result = check(hub, repo=GGUF_REPO, commit=GGUF_COMMIT, per_file=q8)

    assert result.verdict is Verdict.VERIFIED
    assert result.differences == ()


def test_a_gguf_run_may_declare_a_single_file_quantisation(hub: HubStandIn) -> None:
    q4 = {"gemma-4-26B-A4B-it-Q4_K_M.gguf": GGUF_FILES["gemma-4-26B-A4B-it-Q4_K_M.gguf"]}

    assert check(hub, repo=GGUF_REPO, commit=GGUF_COMMIT, per_file=q4).verdict is Verdict.VERIFIED


def test_a_gguf_run_with_an_incomplete_split_group_is_a_mismatch(hub: HubStandIn) -> None:
    part_3 = "Q8_0/gemma-4-26B-A4B-it-Q8_0-00003-of-00003.gguf"
    incomplete = {
        path: digest
        for path, digest in GGUF_FILES.items()
        if path.startswith("Q8_0/") and path != part_3
    }

    result = check(hub, repo=GGUF_REPO, commit=GGUF_COMMIT, per_file=incomplete)

    assert result.verdict is Verdict.MISMATCH
    assert result.differences == (FileDifference(part_3, "extra_on_hub", None, GGUF_FILES[part_3]),)


def test_a_split_group_missing_a_part_on_the_hub_too_is_a_mismatch(hub: HubStandIn) -> None:
    hub.add_repo(
        "org/broken-gguf",
        OTHER_COMMIT,
        {"m-00001-of-00002.gguf": sha("a"), "other.gguf": sha("o")},
    )

    result = check(
        hub,
        repo="org/broken-gguf",
        commit=OTHER_COMMIT,
        per_file={"m-00001-of-00002.gguf": sha("a")},
    )

    assert result.verdict is Verdict.MISMATCH
    assert result.differences == (
        FileDifference("m-00002-of-00002.gguf", "missing_on_hub", None, None),
    )


def test_a_gguf_file_the_hub_does_not_hold_is_a_mismatch(hub: HubStandIn) -> None:
    result = check(hub, repo=GGUF_REPO, commit=GGUF_COMMIT, per_file={"gemma-Q2_K.gguf": sha("q2")})

    assert result.differences == (
        FileDifference("gemma-Q2_K.gguf", "missing_on_hub", sha("q2"), None),
    )


# -- which commit ----------------------------------------------------------------------------


def test_a_branch_name_resolves_to_the_commit_in_the_deployment_manifest(hub: HubStandIn) -> None:
    manifest = {
        "verification": {"verified": True, "revision": COMMIT, "weights_hash": WEIGHTS_HASH}
    }

    commit = resolve_commit("main", manifest)
    result = check(hub, commit=commit)

    assert commit == COMMIT
    assert result.verdict is Verdict.VERIFIED
    assert hub.requests == [("GET", model_info_path(REPO, COMMIT))]


@pytest.mark.parametrize(
    ("hf_revision", "manifest", "expected"),
    [
        (COMMIT, None, COMMIT),
        (COMMIT.upper(), None, COMMIT),
        (COMMIT, {"verification": {"revision": OTHER_COMMIT}}, COMMIT),
        (None, {"verification": {"revision": COMMIT}}, COMMIT),
        ("main", {"verification": {"revision": "main"}}, None),
        ("main", {"verification": None}, None),
        ("main", {}, None),
        (None, None, None),
    ],
)
def test_resolve_commit_prefers_a_pinned_hf_revision(hf_revision, manifest, expected) -> None:
    assert resolve_commit(hf_revision, manifest) == expected


# -- refusals: unverifiable ------------------------------------------------------------------


def test_an_unknown_repo_is_refused(hub: HubStandIn) -> None:
    with pytest.raises(HubRefused, match="404"):
        fetch_hub_answer("org/deleted", COMMIT, endpoint=hub.endpoint, token=None)

    assert hub.requests == [("GET", model_info_path("org/deleted", COMMIT))]


def test_an_unknown_revision_is_refused(hub: HubStandIn) -> None:
    with pytest.raises(HubRefused, match="404"):
        fetch_hub_answer(REPO, OTHER_COMMIT, endpoint=hub.endpoint, token=None)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_gated_or_private_repo_is_refused(hub: HubStandIn, status: int) -> None:
    hub.gate(REPO, status)

    with pytest.raises(HubRefused, match=str(status)):
        fetch_hub_answer(REPO, COMMIT, endpoint=hub.endpoint, token="hf_not_a_real_token")

    assert hub.requests == [("GET", model_info_path(REPO, COMMIT))]


# -- outages: retry later --------------------------------------------------------------------


def test_a_503_is_unavailable_then_the_retry_verifies(hub: HubStandIn) -> None:
    hub.fail_next(REPO, 503)

    with pytest.raises(HubUnavailable, match="503"):
        check(hub)
    result = check(hub)

    assert result.verdict is Verdict.VERIFIED
    assert hub.requests == [("GET", model_info_path(REPO, COMMIT))] * 2


def test_a_429_is_unavailable(hub: HubStandIn) -> None:
    hub.fail_next(REPO, 429, times=2)

    for _ in range(2):
        with pytest.raises(HubUnavailable, match="429"):
            fetch_hub_answer(REPO, COMMIT, endpoint=hub.endpoint, token=None)

    assert len(hub.requests) == 2  # one request per call: the client does not retry on its own


def test_an_unreachable_hub_is_unavailable() -> None:
    closed_port = free_port()

    with pytest.raises(HubUnavailable, match="could not be reached"):
        fetch_hub_answer(REPO, COMMIT, endpoint=f"http://127.0.0.1:{closed_port}", token=None)


def test_a_hub_that_never_answers_times_out_as_unavailable() -> None:
    with socket.socket() as silent:  # listens but never accepts: the request is never answered
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"

        with pytest.raises(HubUnavailable, match="could not be reached"):
            fetch_hub_answer(REPO, COMMIT, endpoint=endpoint, token=None, timeout=0.5)


def test_backoff_doubles_from_a_minute_up_to_an_hour() -> None:
    assert [backoff_seconds(attempt) for attempt in range(8)] == [
        60, 120, 240, 480, 960, 1920, 3600, 3600,
    ]  # fmt: skip
    assert backoff_seconds(1000) == 3600
    assert RETRY_WINDOW_SECONDS == 24 * 3600


# -- the drafter -----------------------------------------------------------------------------
