"""The serve-flag policy (docs/recipes.md §The serve-flag policy): per engine, which flags a
one-click recipe may carry and with which values; the flags that load code, reach the network or
read other files are refused; unknown flags are left out; the image and the drafter are checked;
every assembled command follows it. The demo's recipes stay one-click where they are safe."""

import json

import pytest

from board.hardware import query_device_count
from demo.bundles import PERF_SUITE_ID, job_bundles
from demo.catalogue import ALL_DEMO_MODELS as DEMO_MODELS
from recipes.commands import assemble_commands
from recipes.normalise import RecipeSpec, normalise_recipe
from recipes.policy import check_flags, check_recipe
from recipes.scrub import scrub_flags

COMMIT = "b7e2c1d94f3a5e6b8c0d1f2a3b4c5d6e7f8a9b0c"
SAFE = ["--max-model-len", "65536", "--max-num-seqs", "64", "--enable-prefix-caching"]
DRAFTER = {"method": "dflash", "repo": "z-lab/drafter", "revision": COMMIT, "n": 11}
# A flag each engine's list holds, to show the rest of a recipe stays.
FIRST = {
    "vllm": ["--max-model-len", "65536"],
    "sglang": ["--context-length", "65536"],
    "llama.cpp": ["-c", "65536"],
    "mlx": ["--max-tokens", "4096"],
}
IMAGES = {
    "vllm": "vllm/vllm-openai:v0.11.0",
    "sglang": "lmsysorg/sglang:v0.5.3-cu129",
    "llama.cpp": "ghcr.io/ggml-org/llama.cpp:server",
    "mlx": None,
}
SPEC_CONFIG = '{"method":"dflash","model":"/drafter","num_speculative_tokens":11}'


def spec(engine="vllm", flags=(), image="vllm/vllm-openai:v0.11.0", drafter=None) -> RecipeSpec:
    """A recipe as the board keeps it: its flags scrubbed as at ingest."""
    return RecipeSpec(engine, image, None, tuple(scrub_flags(list(flags))), drafter, 65536)


def statuses(engine: str, flags: list[str]) -> dict[str, str]:
    return {check.text: check.status for check in check_flags(engine, scrub_flags(flags))}


# (engine, the dangerous flag as a pod would send it, the text shown for it): one per family.
DANGEROUS = [
    ("vllm", ["--trust-remote-code"], "--trust-remote-code"),
    ("sglang", ["--trust-remote-code"], "--trust-remote-code"),
    ("mlx", ["--trust-remote-code"], "--trust-remote-code"),
    ("vllm", ["--tokenizer", "evil-org/tokenizer"], "--tokenizer evil-org/tokenizer"),
    ("sglang", ["--tokenizer-path", "evil-org/tok"], "--tokenizer-path evil-org/tok"),
    (
        "vllm",
        ["--hf-overrides", '{"auto_map": {"AutoModelForCausalLM": "evil-org/code--m.Model"}}'],
        '--hf-overrides {"auto_map": {"AutoModelForCausalLM": "evil-org/code--m.Model"}}',
    ),
    (
        "sglang",
        ["--json-model-override-args", '{"rope_scaling": {"auto_map": {"A": "x--y.Z"}}}'],
        '--json-model-override-args {"rope_scaling": {"auto_map": {"A": "x--y.Z"}}}',
    ),
    (
        "vllm",
        ["--chat-template", "https://evil.example/t.jinja"],
        "--chat-template https://evil.example/t.jinja",
    ),
    (
        "vllm",
        ["--chat-template", "{% for m in messages %}"],
        "--chat-template {% for m in messages %}",
    ),
    ("llama.cpp", ["--chat-template-file", "/etc/passwd"], None),  # a host path: scrubbed away
    (
        "vllm",
        ["--worker-extension-cls", "evil.ext.Worker"],
        "--worker-extension-cls evil.ext.Worker",
    ),
    ("vllm", ["--worker-cls", "evil.Worker"], "--worker-cls evil.Worker"),
    ("vllm", ["--tool-parser-plugin", "plugin.py"], "--tool-parser-plugin plugin.py"),
    ("vllm", ["--logits-processors", "evil.LP"], "--logits-processors evil.LP"),
    ("vllm", ["--lora-modules", "a=evil/lora"], "--lora-modules a=evil/lora"),
    ("sglang", ["--enable-custom-logit-processor"], "--enable-custom-logit-processor"),
    ("llama.cpp", ["-hf", "evil/model-GGUF"], "-hf evil/model-GGUF"),
    ("llama.cpp", ["--lora", "adapter.gguf"], "--lora adapter.gguf"),
    ("llama.cpp", ["--rpc", "10.0.0.2:50052"], "--rpc 10.0.0.2:50052"),
    ("vllm", ["--reasoning-parser", "http://evil/p"], "--reasoning-parser http://evil/p"),
    ("vllm", ["--speculative-model", "evil-org/drafter"], "--speculative-model evil-org/drafter"),
    ("mlx", ["--adapter-path", "evil/adapter"], "--adapter-path evil/adapter"),
]


@pytest.mark.parametrize(("engine", "flags", "shown"), DANGEROUS)
def test_flags_that_load_code_reach_the_network_or_other_files_are_refused(engine, flags, shown):
    recipe = spec(engine, FIRST[engine] + flags, image=IMAGES[engine])
    verdict = check_recipe(recipe, drafter_verified=False)

    if shown is None:  # scrubbing already took it out: nothing left to refuse, nothing offered
        assert "/etc/passwd" not in json.dumps(verdict.offered_flags)
        return
    assert verdict.one_click is False
    [reason] = [r for r in verdict.reasons if r.flag == shown]
    assert reason.code == "refused_flag", reason
    assert reason.message
    assert reason.flag not in " ".join(verdict.offered_flags)
    assert verdict.offered_flags == FIRST[engine]  # the rest stays


def test_the_model_and_drafter_own_files_are_allowed_where_other_files_are_refused():
    assert statuses("vllm", ["--tokenizer", "/model", "--chat-template", "/model/chat.jinja"]) == {
        "--tokenizer /model": "allowed",
        "--chat-template /model/chat.jinja": "allowed",
    }
    assert statuses("vllm", ["--chat-template", "/model/../x.jinja"]) == {
        "--chat-template /model/../x.jinja": "refused_flag"
    }
    assert statuses("vllm", ["--hf-overrides", '{"rope_theta": 1000000}']) == {
        '--hf-overrides {"rope_theta": 1000000}': "allowed"
    }
    assert statuses("vllm", ["--hf-overrides", '{"architectures": ["X"]}']) == {
        '--hf-overrides {"architectures": ["X"]}': "bad_value"
    }
    assert statuses("llama.cpp", ["--chat-template", "chatml"]) == {
        "--chat-template chatml": "allowed"
    }
    assert statuses("sglang", ["--speculative-draft-model-path", "/drafter"]) == {
        "--speculative-draft-model-path /drafter": "allowed"
    }


def test_values_are_checked_numbers_in_range_enumerations_and_json_configs():
    assert statuses(
        "vllm",
        [
            "--gpu-memory-utilization", "1.5",
            "--max-num-seqs", "0",
            "--kv-cache-dtype", "int3",
            "--tensor-parallel-size", "2",
            "--max-model-len", "64k",
            "--enforce-eager", "true",
            "--reasoning-parser", "qwen3",
        ],
    ) == {
        "--gpu-memory-utilization 1.5": "bad_value",
        "--max-num-seqs 0": "bad_value",
        "--kv-cache-dtype int3": "bad_value",
        "--tensor-parallel-size 2": "allowed",
        "--max-model-len 64k": "allowed",
        "--enforce-eager true": "allowed",
        "--reasoning-parser qwen3": "allowed",
    }  # fmt: skip
    # A registered name is never a module path nor a file.
    assert statuses("vllm", ["--tool-call-parser", "evil.module"]) == {
        "--tool-call-parser evil.module": "bad_value"
    }


@pytest.mark.parametrize(
    ("config", "status"),
    [
        (SPEC_CONFIG, "allowed"),
        ('{"method":"mtp","num_speculative_tokens":2}', "allowed"),
        ('{"method":"dflash","model":"/drafter","num_speculative_tokens":99}', "bad_value"),
        ('{"method":"evil_method","model":"/drafter"}', "bad_value"),
        ('{"method":"dflash","model":"/drafter","code_revision":"x"}', "bad_value"),
        ('{"method":"dflash","model":"/drafter","draft_model_config":{"a":1}}', "bad_value"),
        ("not json", "bad_value"),
    ],
)
def test_the_speculative_config_only_with_the_drafter_mount_and_known_methods(config, status):
    [check] = check_flags("vllm", scrub_flags(["--speculative-config", config]))
    assert check.status == status, check
    # whatever the pod sent as the drafter's path, the kept recipe points at /drafter
    [check] = check_flags(
        "vllm",
        scrub_flags(["--speculative-config", '{"method":"dflash","model":"evil/d"}']),
    )
    assert check.status == "allowed" and '"model":"/drafter"' in check.text


def test_an_unknown_flag_is_flagged_and_left_out():
    verdict = check_recipe(spec("vllm", SAFE + ["--frobnicate", "3"]), drafter_verified=False)
    assert not verdict.one_click
    assert [(r.code, r.flag) for r in verdict.reasons] == [("unknown_flag", "--frobnicate 3")]
    assert verdict.offered_flags == SAFE
    # abbreviations and underscores an engine's parser might accept are not on the list either
    assert statuses("vllm", ["--trust-remote", "--trust_remote_code"]) == {
        "--trust-remote": "unknown_flag",
        "--trust_remote_code": "unknown_flag",
    }
    # an engine the board has no list for: nothing it carries is one-click
    other = check_recipe(spec("lmstudio", ["--ctx", "4096"], image=None), drafter_verified=False)
    assert {r.code for r in other.reasons} == {"engine_unknown", "unknown_flag"}


def test_a_drafter_is_one_click_only_when_verified_at_a_pinned_commit():
    flags = SAFE + ["--speculative-config", SPEC_CONFIG]
    assert check_recipe(spec(flags=flags, drafter=DRAFTER), drafter_verified=True).one_click
    for drafter, verified, words in [
        (DRAFTER, False, "not verified"),
        (DRAFTER | {"revision": "main"}, True, "not pinned"),
        ({"method": "dflash", "repo": None, "revision": None, "n": 11}, True, "names no"),
    ]:
        verdict = check_recipe(spec(flags=flags, drafter=drafter), drafter_verified=verified)
        [reason] = verdict.reasons
        assert reason.code == "drafter_unverified" and words in reason.message
    # a method loading no drafter model (MTP) needs none
    mtp = ["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}']
    no_model = {"method": "mtp", "repo": None, "revision": None, "n": 2}
    assert check_recipe(spec(flags=mtp, drafter=no_model), drafter_verified=False).one_click


def test_an_image_off_the_allowlist_is_not_one_click():
    verdict = check_recipe(
        spec(flags=SAFE, image="docker.io/spark-lab/vllm-gb10:0.24.0-mtp"), drafter_verified=False
    )
    assert [r.code for r in verdict.reasons] == ["image_withheld"]
    assert check_recipe(spec("mlx", [], image=None), drafter_verified=False).one_click


@pytest.mark.parametrize("shown", [d for d in DANGEROUS if d[2]], ids=lambda d: d[2][:40])
def test_no_assembled_command_carries_a_refused_flag(shown):
    engine, flags, text = shown
    recipe = spec(engine, FIRST[engine] + flags, image=IMAGES[engine])
    commands = assemble_commands(recipe, hf_repo="org/m", revision=COMMIT, model_file="m.gguf")

    assert commands["bare_metal"]
    for key in ("docker_run", "compose", "bare_metal"):
        if commands[key]:
            assert flags[0] not in commands[key], key
            assert FIRST[engine][0] in commands[key], key
    assert text in {flag["flag"] for flag in commands["left_out"]}
    assert commands["one_click"]["one_click"] is False


def test_the_demo_recipes_are_all_one_click_but_the_one_on_a_withheld_image():
    """The demo's champions stay one-click where they are safe: every demo recipe, normalised as
    ingest does, passes the policy with its drafter verified; the one measured on an image off
    the allowlist is refused for that reason alone."""
    refused = {}
    for model in DEMO_MODELS:
        [bundle] = [b for _, suite, _, b in job_bundles(model) if suite == PERF_SUITE_ID]
        verdict = check_recipe(normalise_recipe(bundle["recipe"]), drafter_verified=True)
        if not verdict.one_click:
            refused[model.key] = [reason.code for reason in verdict.reasons]
    assert refused == {"qwen3.6-27b-mtp-spark": ["image_withheld"]}


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("RTX 5090 32GB", 1),  # a one-card pod's label names no count: one card
        ("2× RTX 5090 32GB", 2),
        ("2x rtx 5090", 2),
        ("NVIDIA GPU ×2 (unidentified)", 2),
        ("single DGX Spark (GB10)", 1),
        ("dual DGX Spark (GB10)", 2),
        ("dgx spark", None),  # a person's bare query: every Spark class
        ("TPU v7", None),  # names no class
        ("", None),
    ],
)
def test_the_device_count_a_hardware_query_asks_for(query, count):
    assert query_device_count(query) == count
