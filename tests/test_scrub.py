"""What public surfaces may show of a recipe (design.md §3.9): no host paths, raw commands,
private flags or credentials; the drafter path rewritten to /drafter byte for byte."""

import json
from pathlib import Path

import pytest

from recipes.scrub import find_secrets, scrub_extras, scrub_flags, scrub_recipe

EXAMPLE = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "examples" / "text-final.json").read_text()
)


def test_private_flags_and_their_values_are_dropped():
    flags = [
        "--served-model-name",
        "model-under-test",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--max-model-len",
        "65536",
        "-m",
        "/home/aeon/models/x",
        "--enable-prefix-caching",
    ]
    assert scrub_flags(flags) == ["--max-model-len", "65536", "--enable-prefix-caching"]


def test_credential_flags_and_token_looking_values_are_dropped():
    flags = [
        "--api-key",
        "abc12345",
        "--hf-token=hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "--tokenizer",
        "hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "--max-num-seqs",
        "64",
    ]
    assert scrub_flags(flags) == ["--max-num-seqs", "64"]


def test_the_speculative_config_names_the_drafter_as_slash_drafter_in_compact_json():
    config = {
        "method": "dflash",
        "model": "/models/z-lab__gemma-4-26B-A4B-it-DFlash",
        "num_speculative_tokens": 11,
    }
    scrubbed = scrub_flags(["--speculative-config", json.dumps(config)])
    assert scrubbed == [
        "--speculative-config",
        '{"method":"dflash","model":"/drafter","num_speculative_tokens":11}',
    ]


def test_a_recipe_loses_its_raw_command_docker_run_and_host_paths():
    public = scrub_recipe(EXAMPLE["recipe"])
    assert "command" not in public and "docker_run" not in public and "drafter" not in public
    assert "/home/aeon" not in json.dumps(public)
    assert public["flags"][:2] == ["--max-model-len", "65536"]
    assert EXAMPLE["recipe"]["command"]  # the original is untouched


def test_extras_scrub_the_recipe_inside_the_deployment_manifest_too():
    extras = {
        key: value
        for key, value in EXAMPLE.items()
        if key not in ("results", "run_id", "run_nonce", "final")
    }
    public = scrub_extras(extras)
    assert "/home/aeon" not in json.dumps(public)
    assert public["weights_per_file"] == EXAMPLE["weights_per_file"]


def test_secret_detection_reports_where_and_never_what():
    recipe = {
        "flags": ["--api-key", "sk-abcdefghijklmnopqrstuvwxyz"],
        "image_digest": "repo@sha256:" + "a" * 64,
    }
    pointers = find_secrets(recipe, "/recipe")
    assert pointers == ["/recipe/flags/1"]
    assert not any("sk-" in pointer for pointer in pointers)
    assert find_secrets(EXAMPLE["recipe"], "/recipe") == []


@pytest.mark.django_db(transaction=True)
def test_the_run_api_publishes_no_host_path_or_raw_command(pod):
    content = {
        key: value for key, value in EXAMPLE.items() if key not in ("run_id", "run_nonce", "final")
    }
    answer = pod.submit_run("google/gemma-4-26B-A4B-it", "aeon-suite-v4", "text", content)
    assert answer.status == 200
    published = pod.send("GET", f"/api/v1/runs/{answer.body['run_id']}").body
    text = json.dumps(published)
    assert "/home/aeon" not in text and "docker run" not in text
    assert published["extras"]["recipe"]["engine"] == "aeon-vllm-ultimate"
