"""Commands that reproduce a recipe (docs/recipes.md, "Commands"), per engine, every argument
quoted, and recipe diffs (docs/recipes.md, "Diffs")."""

import json
import shlex
from pathlib import Path

import pytest
import yaml

from recipes.commands import assemble_commands
from recipes.diff import diff_flags, diff_recipes
from recipes.images import NOT_ALLOWED_NOTE, offered_image
from recipes.normalise import RecipeSpec, normalise_recipe

EXAMPLE = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "examples" / "text-final.json").read_text()
)
COMMIT = "b7e2c1d94f3a5e6b8c0d1f2a3b4c5d6e7f8a9b0c"
HOSTILE = "$(rm -rf ~)"


def spec_of(engine: str, image: str | None, flags: list[str], drafter=None) -> RecipeSpec:
    return RecipeSpec(engine, image, None, tuple(flags), drafter, 65536)


def lines(command: str) -> list[str]:
    """The argv a shell would run for a command line."""
    return shlex.split(command.replace("\\\n", " "))


def test_a_vllm_recipe_gives_downloads_at_the_pinned_commits_docker_compose_and_bare_metal():
    spec = normalise_recipe(EXAMPLE["recipe"])
    commands = assemble_commands(
        spec, hf_repo=EXAMPLE["hf_repo"], revision=COMMIT, drafter_verified=True
    )

    assert lines(commands["hf_download"]) == [
        "huggingface-cli", "download", "google/gemma-4-26B-A4B-it", "--revision", COMMIT,
        "--local-dir", "models/google/gemma-4-26B-A4B-it",
    ]  # fmt: skip
    assert lines(commands["drafter_download"]) == [
        "huggingface-cli", "download", "z-lab/gemma-4-26B-A4B-it-DFlash",
        "--revision", EXAMPLE["recipe"]["drafter_revision"],
        "--local-dir", "models/z-lab/gemma-4-26B-A4B-it-DFlash",
    ]  # fmt: skip
    docker = lines(commands["docker_run"])
    assert docker[:2] == ["docker", "run"]
    assert "./models/z-lab/gemma-4-26B-A4B-it-DFlash:/drafter:ro" in docker
    image_at = docker.index("ghcr.io/aeon-7/aeon-vllm-ultimate:latest")
    assert docker[image_at - 2 : image_at + 3] == [
        "--entrypoint", "vllm", "ghcr.io/aeon-7/aeon-vllm-ultimate:latest", "serve", "/model",
    ]  # fmt: skip
    assert docker[-len(spec.flags) :] == list(spec.flags)
    compose = yaml.safe_load(commands["compose"])["services"]["serve"]
    assert compose["entrypoint"] == ["vllm"]
    assert compose["command"][-len(spec.flags) :] == list(spec.flags)
    bare = lines(commands["bare_metal"])
    assert bare[:3] == ["vllm", "serve", "models/google/gemma-4-26B-A4B-it"]
    assert json.loads(bare[-1])["model"] == "models/z-lab/gemma-4-26B-A4B-it-DFlash"
    assert commands["notes"] == []
    assert commands["one_click"] == {"one_click": True, "reasons": []}
    assert commands["left_out"] == []


def test_an_unverified_drafter_is_neither_downloaded_mounted_nor_named_by_any_command():
    spec = normalise_recipe(EXAMPLE["recipe"])
    commands = assemble_commands(spec, hf_repo=EXAMPLE["hf_repo"], revision=COMMIT)

    assert commands["drafter_download"] is None
    for key in ("docker_run", "compose", "bare_metal"):
        assert "/drafter" not in commands[key] and "DFlash" not in commands[key], key
        assert "--speculative-config" not in commands[key], key
        assert "--max-num-seqs" in commands[key], key  # the other flags stay
    assert commands["one_click"]["one_click"] is False
    assert [r["code"] for r in commands["one_click"]["reasons"]] == ["drafter_unverified"]
    assert any("The drafter is left out" in note for note in commands["notes"])


@pytest.mark.parametrize(
    ("engine", "image", "program"),
    [
        ("vllm", "vllm/vllm-openai:v0.11.0", ["vllm", "serve"]),
        ("sglang", "lmsysorg/sglang:v0.5.3-cu129", ["python3", "-m", "sglang.launch_server"]),
        ("llama.cpp", "ghcr.io/ggml-org/llama.cpp:server-cuda", ["llama-server", "-m"]),
    ],
)
def test_a_shell_expression_in_a_flag_is_left_out_and_one_elsewhere_is_quoted_in_every_command(
    engine, image, program
):
    # A flag value the policy does not accept never reaches a command (docs/recipes.md §The
    # serve-flag policy); what does reach one — the repository, the model file — is quoted.
    spec = spec_of(engine, image, ["--chat-template-content-format", HOSTILE, "--x", "a b"])
    repo = f"org/{HOSTILE}"
    commands = assemble_commands(spec, hf_repo=repo, revision=COMMIT, model_file=f"{HOSTILE}.gguf")

    for key in ("docker_run", "bare_metal"):
        argv = lines(commands[key])
        assert "--chat-template-content-format" not in argv and "--x" not in argv, key
        assert repo in argv or f"models/{repo}/{HOSTILE}.gguf" in argv, key
        assert f"'{HOSTILE}" in commands[key] or f"/{HOSTILE}" in commands[key]
        assert shlex.quote(argv[-1]) in commands[key]
    assert lines(commands["bare_metal"])[: len(program)] == program
    assert {flag["flag"] for flag in commands["left_out"]} == {
        f"--chat-template-content-format {HOSTILE}",
        "--x a b",
    }
    assert "Left out of these commands" in " ".join(commands["notes"])
    # compose interpolates `$`: doubled, it reaches the container as a literal `$`
    compose = yaml.safe_load(commands["compose"])["services"]["serve"]
    assert any("$$(rm -rf ~)" in arg for arg in compose["command"])


def test_a_hostile_repository_name_is_quoted_too():
    spec = spec_of("vllm", "vllm/vllm-openai:latest", [])
    commands = assemble_commands(spec, hf_repo="org/x;reboot", revision=None)
    assert lines(commands["hf_download"])[2] == "org/x;reboot"
    assert "The model's commit is not known yet" in commands["notes"][0]


def test_llama_cpp_downloads_only_the_gguf_files_it_loads():
    spec = spec_of("llama.cpp", "ghcr.io/ggml-org/llama.cpp:server", ["-c", "65536"])
    commands = assemble_commands(
        spec, hf_repo="org/m-GGUF", revision=COMMIT, model_file="m-Q4_K_M-00001-of-00003.gguf"
    )
    download = lines(commands["hf_download"])
    assert download[download.index("--include") + 1] == "m-Q4_K_M-*-of-00003.gguf"
    docker = lines(commands["docker_run"])
    assert "--gpus" not in docker  # the CPU image
    assert docker[docker.index("-m") + 1] == "/model/m-Q4_K_M-00001-of-00003.gguf"


def test_an_image_off_the_allowlist_is_withheld_with_a_note_and_the_stock_image_used():
    assert offered_image("ghcr.io/aeon-7/aeon-vllm-ultimate:latest")[0]
    assert (
        offered_image("docker.io/vllm/vllm-openai:v0.11.0")[0]
        == "docker.io/vllm/vllm-openai:v0.11.0"
    )
    assert offered_image("docker.io/spark-lab/vllm-gb10:0.24.0-mtp") == (None, NOT_ALLOWED_NOTE)

    spec = spec_of("vllm", "docker.io/spark-lab/vllm-gb10:0.24.0-mtp", ["--max-num-seqs", "8"])
    commands = assemble_commands(spec, hf_repo="org/m", revision=COMMIT)
    assert "spark-lab" not in commands["docker_run"] + commands["compose"]
    assert "vllm/vllm-openai:latest" in lines(commands["docker_run"])
    assert NOT_ALLOWED_NOTE in commands["notes"]


def test_the_allowlist_is_a_setting(settings):
    settings.AEON_RECIPE_IMAGES = ["registry.example.org/team/vllm"]
    assert (
        offered_image("registry.example.org/team/vllm:v1")[0] == "registry.example.org/team/vllm:v1"
    )
    assert offered_image("vllm/vllm-openai:latest")[0] is None


def test_engines_without_a_command_still_get_their_download():
    commands = assemble_commands(spec_of("lmstudio", None, []), hf_repo="org/m", revision=COMMIT)
    assert commands["docker_run"] is None and commands["bare_metal"] is None
    assert lines(commands["hf_download"])[:3] == ["huggingface-cli", "download", "org/m"]
    mlx = assemble_commands(
        spec_of("mlx", None, ["--max-tokens", "4096"]), hf_repo="o/m", revision=COMMIT
    )
    assert mlx["docker_run"] is None
    assert lines(mlx["bare_metal"])[:3] == ["mlx_lm.server", "--model", "models/o/m"]


def test_a_diff_lists_flags_added_removed_and_changed_and_other_fields():
    before = ["--max-num-seqs", "24", "--enforce-eager", "--kv-cache-dtype", "auto"]
    after = ["--max-num-seqs=64", "--kv-cache-dtype", "auto", "--enable-prefix-caching"]
    assert diff_flags(before, after) == {
        "added": [{"flag": "--enable-prefix-caching", "value": None}],
        "removed": [{"flag": "--enforce-eager", "value": None}],
        "changed": [{"flag": "--max-num-seqs", "from": "24", "to": "64"}],
    }
    base = spec_of("vllm", "vllm/vllm-openai:latest", before)
    other = spec_of("vllm", "vllm/vllm-openai:latest", before)
    assert diff_recipes(base, other)["identical"] is True
    drafted = spec_of("vllm", "vllm/vllm-openai:latest", before, {"method": "dflash", "n": 11})
    assert diff_recipes(base, drafted)["fields"] == [
        {"field": "drafter", "from": None, "to": {"method": "dflash", "n": 11}}
    ]
