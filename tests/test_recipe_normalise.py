"""Recipes as content-addressed objects (docs/recipes.md, "What a recipe is"): the same serving
setup is one recipe whatever the machine it ran on; older and flag-less recipes normalise too."""

import copy
import hashlib
import json
from pathlib import Path

from recipes.normalise import normalise_recipe

EXAMPLE = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "examples" / "text-final.json").read_text()
)
RECIPE = EXAMPLE["recipe"]
SPEC_CONFIG = '{"method":"dflash","model":"/drafter","num_speculative_tokens":11,"attention_backend":"TRITON_ATTN"}'


def test_the_example_recipe_normalises_to_engine_image_flags_drafter_and_context():
    spec = normalise_recipe(RECIPE)

    assert spec.canonical() == {
        "engine": "aeon-vllm-ultimate",
        "image": "ghcr.io/aeon-7/aeon-vllm-ultimate:latest",
        "image_digest": RECIPE["image_digest"],
        "flags": [
            "--max-model-len", "65536", "--gpu-memory-utilization", "0.65",
            "--quantization", "modelopt", "--kv-cache-dtype", "auto",
            "--attention-backend", "triton_attn", "--reasoning-parser", "gemma4",
            "--tool-call-parser", "gemma4", "--enable-auto-tool-choice",
            "--max-num-seqs", "24", "--speculative-config", SPEC_CONFIG,
        ],
        "drafter": {
            "method": "dflash",
            "repo": "z-lab/gemma-4-26B-A4B-it-DFlash",
            "revision": RECIPE["drafter_revision"],
            "n": 11,
        },
        "context_len": 65536,
    }  # fmt: skip
    assert spec.id == hashlib.sha256(spec.canonical_json().encode()).hexdigest()
    assert spec.canonical_json() == json.dumps(
        spec.canonical(), sort_keys=True, separators=(",", ":")
    )


def test_the_machine_it_ran_on_does_not_change_the_recipe():
    elsewhere = copy.deepcopy(RECIPE)
    elsewhere["flags"][1] = "my-alias"  # --served-model-name
    elsewhere["flags"][5] = "9000"  # --port
    elsewhere["drafter"] = "/mnt/nvme/drafters/x"
    elsewhere["docker_run"] = "something else entirely"
    assert normalise_recipe(elsewhere).id == normalise_recipe(RECIPE).id


def test_one_flag_changed_is_another_recipe():
    tuned = copy.deepcopy(RECIPE)
    tuned["flags"][tuned["flags"].index("--max-num-seqs") + 1] = "32"
    assert normalise_recipe(tuned).id != normalise_recipe(RECIPE).id


def test_an_older_pods_recipe_sent_as_a_json_string_is_the_same_recipe():
    assert normalise_recipe(json.dumps(RECIPE)).id == normalise_recipe(RECIPE).id
    assert normalise_recipe("not json") is None
    assert normalise_recipe(None) is None


def test_sglang_and_llama_cpp_recipes_take_their_flags_from_the_command():
    sglang = {
        "engine": "sglang",
        "serve_mode": "docker",
        "image": "lmsysorg/sglang:v0.5.3-cu129",
        "flags": [],
        "command": [
            "docker", "run", "--rm", "--gpus", "all", "-v", "/home/a/m:/model:ro",
            "lmsysorg/sglang:v0.5.3-cu129", "python3", "-m", "sglang.launch_server",
            "--model-path", "/model", "--served-model-name", "x", "--host", "0.0.0.0",
            "--port", "30000", "--tp", "2", "--context-length", "65536",
            "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", "org/eagle3-drafter",
            "--speculative-num-draft-tokens", "4",
        ],
    }  # fmt: skip
    spec = normalise_recipe(sglang)
    assert spec.flags == (
        "--tp", "2", "--context-length", "65536", "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", "org/eagle3-drafter",
        "--speculative-num-draft-tokens", "4",
    )  # fmt: skip
    assert spec.drafter == {
        "method": "eagle3",
        "repo": "org/eagle3-drafter",
        "revision": None,
        "n": 4,
    }
    assert spec.context_len == 65536

    llama = {
        "engine": "llama.cpp",
        "serve_mode": "docker",
        "command": [
            "docker", "run", "-v", "/home/a:/model:ro", "ghcr.io/ggml-org/llama.cpp:server",
            "-m", "/model/q.gguf", "--alias", "x", "-c", "65536", "-np", "4", "--jinja",
        ],
    }  # fmt: skip
    spec = normalise_recipe(llama)
    assert spec.image == "ghcr.io/ggml-org/llama.cpp:server"
    assert spec.flags == ("-c", "65536", "-np", "4", "--jinja")
    assert (spec.drafter, spec.context_len) == (None, 65536)


def test_the_drafter_comes_from_the_speculative_config_when_the_keys_are_missing():
    recipe = {
        "engine": "vllm",
        "flags": [
            "--speculative-config",
            json.dumps({"method": "eagle", "model": "org/eagle-head", "num_speculative_tokens": 3}),
        ],
    }
    spec = normalise_recipe(recipe)
    assert spec.drafter == {"method": "eagle", "repo": "org/eagle-head", "revision": None, "n": 3}
    assert spec.flags[1] == '{"method":"eagle","model":"/drafter","num_speculative_tokens":3}'


def test_a_bare_metal_recipe_has_no_image_and_an_invalid_digest_is_dropped():
    spec = normalise_recipe(
        {
            "engine": "MLX",
            "serve_mode": "bare",
            "image": "ignored",
            "image_digest": "not-a-digest",
            "command": ["mlx_lm.server", "--model", "/Users/a/m", "--port", "8080"],
        }
    )
    assert (spec.engine, spec.image, spec.image_digest, spec.flags) == ("mlx", None, None, ())
