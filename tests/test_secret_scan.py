"""The secret scan (docs/recipes.md, "Secrets"): every string and key of a bundle, prefixed
tokens everywhere, the long-random heuristic only where the operator's machine wrote; pointers
say where and never what."""

import base64
import json
import random
from pathlib import Path

from recipes.secret_scan import (
    find_bundle_secrets,
    is_credential_name,
    json_may_hold_token,
    looks_like_token,
)

EXAMPLE = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "examples" / "text-final.json").read_text()
)
HF_TOKEN = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k"


def test_prefixed_tokens_are_found_and_placeholders_are_not():
    assert looks_like_token(f"export HF_TOKEN={HF_TOKEN}")
    assert looks_like_token("key sk-proj-4fG7hJ9kL2mN5pQ8rS1tU4v", operator=False)
    assert looks_like_token("ghp_" + "x1Y2z3A4b5C6d7E8f9G0h1I2j3K4l5M6n7", operator=False)
    assert looks_like_token("AKIAIOSFODNN7EXAMPLE", operator=False)
    assert not looks_like_token("sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxx", operator=False)
    assert not looks_like_token("hf_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", operator=False)


def test_long_random_strings_count_only_where_the_operator_wrote():
    secret = "Zq8vR2mX7kP4wL9tB3nY6cH1jF5gD0sA"
    assert looks_like_token(f"token {secret}")
    assert not looks_like_token(f"token {secret}", operator=False)
    # names, digests and architectures are not secrets
    for text in (
        "Gemma4ForConditionalGeneration",
        "DeepSeek-R1-Distill-Qwen-32B-abliterated-Q4_K_M-imatrix",
        "sha256:" + "3e" * 32,
        "b7e2c1d94f3a5e6b8c0d1f2a3b4c5d6e7f8a9b0c",
        EXAMPLE["recipe"]["image_digest"],
    ):
        assert not looks_like_token(text), text


def test_the_example_bundle_is_clean():
    assert find_bundle_secrets(EXAMPLE, EXAMPLE["results"]) == []


def test_a_token_anywhere_in_a_bundle_is_found_by_its_pointer():
    bundle = json.loads(json.dumps(EXAMPLE))
    bundle["serve_log"] = f"export HF_TOKEN={HF_TOKEN}"
    bundle["environment"]["hardware"]["label"] = HF_TOKEN
    bundle["deployment_manifest"]["docker_run"] = "docker run -e HF_TOKEN=s3cr3tValue99 img"
    bundle["artifacts"][0]["html"] += f"<script>fetch(u, {{key: '{HF_TOKEN}'}})</script>"
    rows = bundle["results"] + [{"case_id": "v4.x", "raw_output": f"use {HF_TOKEN}"}]

    pointers = find_bundle_secrets(bundle, rows)

    assert pointers == [
        "/artifacts/0/html",
        "/deployment_manifest/docker_run",
        "/environment/hardware/label",
        "/results/3/raw_output",
        "/serve_log",
    ]
    assert not any(HF_TOKEN in pointer for pointer in pointers)


def test_a_token_used_as_a_key_is_reported_without_the_key():
    pointers = find_bundle_secrets({"extra": {HF_TOKEN: {"ok": True}}, HF_TOKEN: 1})
    assert pointers == ["/(key)", "/extra/(key)"]


def test_credential_keys_and_flags_count_in_operator_text_only():
    scan = find_bundle_secrets
    assert scan({"environment": {"hf_token": "abcdefgh12"}}) == ["/environment/hf_token"]
    assert scan({"recipe": {"tokenizer": "google/gemma-4-26B-A4B-it"}}) == []
    assert scan({"recipe": {"max_tokens": "100000000"}}) == []
    assert scan({"flags": ["--api-key", "abc12345"]}) == ["/flags/1"]
    assert scan({"x": "serve --api-key=abc12345"}) == ["/x"]
    assert scan({"results": [{"hf_token": "abcdefgh12"}]}) == []  # model output


def test_base64_images_in_artifacts_and_long_outputs_do_not_withhold_a_run():
    rng = random.Random(7)
    image = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(200_000))).decode()
    bundle = {
        "artifacts": [{"html": f"<img src='data:image/png;base64,{image}'>"}],
        "results": [],
    }
    rows = [{"case_id": "v4.coding.x", "raw_output": image.replace("+", "").replace("/", "")}]
    assert find_bundle_secrets(bundle, rows) == []


def strings_of(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, str):
        yield value


def test_the_one_pass_over_json_text_answers_clean_exactly_when_no_decoded_string_holds_a_token():
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    pieces = [
        HF_TOKEN,
        "hf_" + "X" * 34,  # a placeholder
        "sk-proj-4fG7hJ9kL2mN5pQ8rS1tU4v",
        "sk-" + "x" * 25,
        "ghp_" + "x1Y2z3A4b5C6d7E8f9G0h1I2j3K4l5M6n7",
        "github_pat_" + "a1B2c3D4e5F6g7H8i9J0" * 3,
        "AKIAIOSFODNN7EXAMPLE",
        "AKIA" + "A" * 16,
        "xoxb-12345-abcdef",
        "xoxb-" + "1" * 12,
        # A placeholder-looking token whose last letters begin a real one.
        "hf_" + "f" * 28 + HF_TOKEN,
        "hf_" + "k" * 28 + "sk-" + "4fG7hJ9kL2mN5pQ8rS1tU4v",
        "sk-" + "x" * 20 + "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k",
        'quote " back \\ slash hf_ sk- gh AKIA xox',
        "\u00e9t\u00e9 caf\u00e9 \u2603",
        "NaN \n\t",
    ]
    clean = token = 0
    for _ in range(400):
        words = [
            rng.choice(pieces) if rng.random() < 0.15 else "".join(rng.choices(alphabet, k=8))
            for _ in range(rng.randrange(1, 6))
        ]
        glue = rng.choice(["", " ", '"', "\\", "_", "-"])
        text = glue.join(words)
        document = {"results": [{"raw_output": text}], rng.choice(words)[:60]: [1, "x"]}
        expected = any(looks_like_token(s, operator=False) for s in strings_of(document))
        for ensure_ascii in (True, False):
            data = json.dumps(document, ensure_ascii=ensure_ascii).encode()
            assert json_may_hold_token(data) == expected, text
        clean, token = clean + (not expected), token + expected
    assert clean > 50 and token > 50


def test_a_token_character_spelled_as_an_escape_may_hold_a_token():
    assert json_may_hold_token(b'{"a": "\\u0068f_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k"}')
    assert not json_may_hold_token(b'{"a": "caf\\u00e9 \\u001f"}')


def test_a_bundle_whose_text_holds_no_prefixed_token_is_still_searched_where_the_operator_wrote():
    bundle = EXAMPLE | {
        "environment": {
            "launcher": {"api_key": "abcd1234efgh", "note": "Zq8vR2mX7kP4wL9tB3nY6cH1"}
        },
        "serve_log": "vllm serve --api-key s3cr3tvalue /model",
        "Zq8vR2mX7kP4wL9tB3nY6cH1jF5gD0sAz": 1,
    }
    assert not json_may_hold_token(json.dumps(bundle).encode())
    found = find_bundle_secrets(bundle, model_output_clean=True)
    assert (
        found
        == find_bundle_secrets(bundle)
        == [
            "/(key)",
            "/environment/launcher/api_key",
            "/serve_log",
        ]
    )


def test_credential_names_are_judged_alike_short_or_long_and_asked_again():
    for _ in range(2):
        for prefix in ("", "x" * 200 + "_"):
            assert is_credential_name(prefix + "hf_token")
            assert is_credential_name(prefix + "AWS_SECRET_ACCESS_KEY")
            assert not is_credential_name(prefix + "tokens_per_second")
        assert is_credential_name("--API-KEY") and not is_credential_name("--max-model-len")
