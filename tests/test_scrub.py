"""What public surfaces may show of a recipe (docs/recipes.md, "Scrubbing"): no host paths,
raw commands, private flags or credentials; the drafter path rewritten to /drafter byte for
byte; no job signature, group or start stamp."""

import json
from pathlib import Path

import pytest

from recipes.scrub import (
    mask_home_paths,
    mask_host_paths,
    public_name,
    public_timeline,
    scrub_extras,
    scrub_flags,
    scrub_recipe,
)
from recipes.secret_scan import find_bundle_secrets

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


def test_a_model_path_after_a_switch_or_under_model_is_dropped():
    assert scrub_flags(["--jinja", "-m", "/home/alice/models/x.gguf"]) == ["--jinja"]
    assert scrub_flags(["--model", "/home/alice/models/x"]) == []
    assert scrub_flags(["-m/home/alice/models/x.gguf", "-c", "65536"]) == ["-c", "65536"]


def test_options_whose_value_is_a_host_path_are_dropped_and_container_paths_kept():
    flags = [
        "--download-dir",
        "/home/alice/cache",
        "--chat-template=/home/alice/template.jinja",
        "--lora-modules",
        "~/loras/x",
        "--generation-config",
        "/model",
        "--chat-template",
        "/model/chat_template.jinja",
        "--otlp-traces-endpoint",
        "http://collector:4317/v1/traces",
        "--max-model-len",
        "65536",
    ]
    assert scrub_flags(flags) == [
        "--generation-config",
        "/model",
        "--chat-template",
        "/model/chat_template.jinja",
        "--otlp-traces-endpoint",
        "http://collector:4317/v1/traces",
        "--max-model-len",
        "65536",
    ]


def test_positionals_are_dropped_and_negative_values_kept():
    flags = ["/home/alice/models/x", "--temperature", "-0.5", "--enforce-eager", "--seed", "-1"]
    assert scrub_flags(flags) == ["--temperature", "-0.5", "--enforce-eager", "--seed", "-1"]


def test_json_values_lose_only_their_private_entries():
    config = json.dumps({"a": 1, "cache": "/home/alice/c", "token": "s3cretvalue"})
    assert scrub_flags(["--hf-overrides", config]) == ["--hf-overrides", '{"a":1}']
    untouched = '{"temperature": 0.6}'
    assert scrub_flags(["--override-generation-config", untouched])[1] == untouched


def test_a_shell_expression_is_a_value_like_any_other():
    assert scrub_flags(["--chat-template-content-format", "$(rm -rf ~)"]) == [
        "--chat-template-content-format",
        "$(rm -rf ~)",
    ]


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


def test_extras_publish_no_job_signature_group_start_stamp_or_raw_command():
    extras = {
        "job_sig": "a7583297f3337b403f2f1196",
        "job_group": "6aaa9be6e277ff68c03e99dc",
        "started_at": "2026-03-01T09:00:00Z",
        "environment": {"hardware": {"gpus": ["NVIDIA GB10, [N/A], 580"]}, "job_started": 17},
        "deployment_manifest": {
            "docker_run": "docker run -v /home/alice/m:/model vllm serve",
            "command": ["vllm", "serve", "/home/alice/m"],
            "served_model_check": {"endpoint": "http://127.0.0.1:8000/v1"},
        },
        "serve_log": "loading /home/alice/models/x/config.json at 12 tok/s",
    }
    public = scrub_extras(extras)
    assert set(public) == {"environment", "deployment_manifest", "serve_log"}
    assert public["environment"] == {"hardware": {"gpus": ["NVIDIA GB10, [N/A], 580"]}}
    assert public["deployment_manifest"] == {
        "served_model_check": {"endpoint": "http://127.0.0.1:8000/v1"}
    }
    assert public["serve_log"] == "loading [host path] at 12 tok/s"


def test_free_text_paths_are_masked_but_urls_units_and_mounts_are_not():
    text = "HF_HOME=/home/a/.cache -v /srv/m:/model:ro ~/x C:\\Users\\b\\m tok/s N/A http://h/v1/x"
    assert mask_host_paths(text) == (
        "HF_HOME=[host path] -v [host path]:/model:ro [host path] [host path] tok/s N/A http://h/v1/x"
    )
    assert mask_host_paths("/model/config.json and /drafter") == "/model/config.json and /drafter"


def test_model_output_keeps_its_paths_without_the_operators_account():
    assert mask_home_paths("cd /home/alice/work && cat /etc/os-release /root/x") == (
        "cd ~/work && cat /etc/os-release ~/x"
    )


def test_a_declared_model_path_keeps_only_its_name():
    assert public_name("/home/alice/models/qwen3-4b-q4.gguf") == "qwen3-4b-q4.gguf"
    assert public_name("google/gemma-4-26B-A4B-it") == "google/gemma-4-26B-A4B-it"


def test_the_sustained_timeline_counts_seconds_from_its_first_sample():
    evidence = {"points": [{"t": 1786700000.12, "kv": 0.2}, {"t": 1786700015.09, "kv": 0.3}]}
    assert public_timeline(evidence) == {"points": [{"t": 0.0, "kv": 0.2}, {"t": 14.97, "kv": 0.3}]}


def test_secret_detection_reports_where_and_never_what():
    recipe = {
        "flags": ["--api-key", "sk-abcdefghijklmnopqrstuvwxyz"],
        "image_digest": "repo@sha256:" + "a" * 64,
    }
    pointers = find_bundle_secrets({"recipe": recipe})
    assert pointers == ["/recipe/flags/1"]
    assert not any("sk-" in pointer for pointer in pointers)
    assert find_bundle_secrets({"recipe": EXAMPLE["recipe"]}) == []


@pytest.mark.django_db
def test_the_run_api_publishes_no_host_path_or_raw_command(pod):
    content = {
        key: value for key, value in EXAMPLE.items() if key not in ("run_id", "run_nonce", "final")
    }
    answer = pod.submit_run("google/gemma-4-26B-A4B-it", "aeon-suite-v4", "text", content)
    assert answer.status == 200
    published = pod.send("GET", f"/api/v1/runs/{answer.body['run_id']}").body
    text = json.dumps(published)
    assert "/home/aeon" not in text and "docker run" not in text
    assert EXAMPLE["job_sig"] not in text and EXAMPLE["job_group"] not in text
    assert "job_sig" not in published and "job_group" not in published
    assert published["extras"]["recipe"]["engine"] == "aeon-vllm-ultimate"
