"""The one argv reader (docs/recipes.md, "Reading flags"): options and values read the way the
engines read them, and everything that needs a flag asks it."""

import json

from recipes.argv import (
    DOCKER_BOOLEAN_OPTIONS,
    REMEMBERED_ARGV_CHARS,
    Arg,
    context_len_from,
    docker_image,
    engine_args,
    max_num_seqs_from,
    option_value,
    read_argv,
    tokens_of,
    write_argv,
)
from recipes.normalise import context_len_of, max_num_seqs_of


def test_a_switch_followed_by_a_short_option_does_not_swallow_it():
    assert read_argv(["--jinja", "-m", "/home/alice/models/x.gguf"]) == [
        Arg("--jinja"),
        Arg("-m", "/home/alice/models/x.gguf"),
    ]


def test_inline_values_keep_their_form_and_everything_after_the_first_equals_sign():
    args = read_argv(["--max-model-len=65536", "-c=4096", "--override=a=b"])
    assert args == [
        Arg("--max-model-len", "65536", inline=True),
        Arg("-c", "4096", inline=True),
        Arg("--override", "a=b", inline=True),
    ]
    assert write_argv(args) == ["--max-model-len=65536", "-c=4096", "--override=a=b"]


def test_negative_numbers_are_values_not_options():
    assert read_argv(["--temperature", "-0.5", "--seed", "-1", "--eps", "-1e-3"]) == [
        Arg("--temperature", "-0.5"),
        Arg("--seed", "-1"),
        Arg("--eps", "-1e-3"),
    ]


def test_an_unknown_option_takes_the_next_word_and_a_known_switch_does_not():
    assert read_argv(["--enforce-eager", "/model", "--kv-cache-dtype", "fp8"]) == [
        Arg("--enforce-eager"),
        Arg(None, "/model"),
        Arg("--kv-cache-dtype", "fp8"),
    ]


def test_a_switch_may_still_take_a_boolean_word():
    assert read_argv(["-fa", "on", "--enable-chunked-prefill", "true", "--jinja"]) == [
        Arg("-fa", "on"),
        Arg("--enable-chunked-prefill", "true"),
        Arg("--jinja"),
    ]


def test_json_values_are_read_whole():
    config = json.dumps({"method": "dflash", "model": "/drafter", "num_speculative_tokens": 11})
    assert option_value(["--speculative-config", config], ["--speculative-config"]) == config


def test_custom_flags_entries_are_split_at_their_first_space():
    entries = ["--max-num-seqs 24", '--speculative-config {"method": "dflash"}', "--jinja"]
    assert read_argv(entries) == [
        Arg("--max-num-seqs", "24"),
        Arg("--speculative-config", '{"method": "dflash"}'),
        Arg("--jinja"),
    ]


def test_the_last_occurrence_wins():
    assert option_value(["-c", "4096", "--ctx-size", "8192"], ["-c", "--ctx-size"]) == "8192"


def test_context_length_under_every_engines_name_and_with_size_suffixes():
    assert context_len_from(["--max-model-len", "65536"]) == 65536
    assert context_len_from(["--context-length=131072"]) == 131072
    assert context_len_from(["--ctx-size", "32768"]) == 32768
    assert context_len_from(["--jinja", "-c", "65536"]) == 65536
    assert context_len_from(["--max-model-len", "64k"]) == 64000
    assert context_len_from(["--max-model-len", "64K"]) == 65536
    assert context_len_from(["--max-model-len", "6.5536e4"]) == 65536
    assert context_len_from(["--max-model-len", "1e400"]) == 10**30  # absurd: out of every range
    assert context_len_from(["--max-model-len", "9" * 5000]) == 10**30
    assert context_len_from(["--max-model-len", "lots"]) is None
    assert context_len_from(["--max-num-seqs", "8"]) is None


def test_the_concurrency_cap_of_vllm_sglang_and_llama_cpp():
    assert max_num_seqs_from(["--max-num-seqs", "64"]) == 64
    assert max_num_seqs_from(["--max-running-requests", "32"]) == 32
    assert max_num_seqs_from(["-np", "4"]) == 4
    assert max_num_seqs_from(["--max-num-seqs", "0"]) is None
    assert max_num_seqs_from(["--max-num-seqs", "9" * 5000]) is None
    # a pod's custom_flags entry, and a command line
    assert max_num_seqs_from(["--max-num-seqs 24", "--kv-cache-dtype auto"]) == 24
    assert max_num_seqs_from("--enforce-eager --max-num-seqs=12") == 12


VLLM_DOCKER = [
    "docker", "run", "--rm", "--name", "serve", "--network", "host", "--gpus", "all",
    "-v", "/home/aeon/models/x:/model:ro", "--entrypoint", "vllm",
    "ghcr.io/aeon-7/aeon-vllm-ultimate:latest", "serve", "/model",
    "--served-model-name", "m", "--max-model-len", "65536",
]  # fmt: skip
SGLANG_DOCKER = [
    "docker", "run", "--rm", "-it", "--shm-size", "16g", "-v", "/home/a/m:/model:ro",
    "lmsysorg/sglang:v0.5.3-cu129", "python3", "-m", "sglang.launch_server",
    "--model-path", "/model", "--tp", "2", "--context-length", "65536",
    "--max-running-requests", "32",
]  # fmt: skip
LLAMA_DOCKER = [
    "docker", "run", "--rm", "-v", "/home/a:/model:ro", "ghcr.io/ggml-org/llama.cpp:server",
    "-m", "/model/q.gguf", "-c", "65536", "-np", "4", "-t", "64", "--jinja",
]  # fmt: skip


def test_the_engine_arguments_and_image_of_docker_commands():
    assert docker_image(VLLM_DOCKER) == "ghcr.io/aeon-7/aeon-vllm-ultimate:latest"
    assert engine_args(VLLM_DOCKER) == ["--served-model-name", "m", "--max-model-len", "65536"]
    assert docker_image(SGLANG_DOCKER) == "lmsysorg/sglang:v0.5.3-cu129"
    assert engine_args(SGLANG_DOCKER)[:2] == ["--model-path", "/model"]
    assert docker_image(LLAMA_DOCKER) == "ghcr.io/ggml-org/llama.cpp:server"
    assert engine_args(LLAMA_DOCKER)[:4] == ["-m", "/model/q.gguf", "-c", "65536"]


def test_the_engine_arguments_of_bare_metal_commands():
    assert engine_args("vllm serve /models/x --max-num-seqs 8") == ["--max-num-seqs", "8"]
    assert engine_args(["python", "-m", "sglang.launch_server", "--tp", "2"]) == ["--tp", "2"]
    assert engine_args(["llama-server", "-m", "x.gguf", "-c", "8192"]) == [
        "-m",
        "x.gguf",
        "-c",
        "8192",
    ]
    assert docker_image(["llama-server", "-m", "x.gguf"]) is None


def test_recipes_without_flags_are_read_from_their_command():
    sglang = {"engine": "sglang", "flags": [], "command": SGLANG_DOCKER, "context_len": 4096}
    llama = {"engine": "llama.cpp", "command": LLAMA_DOCKER}
    assert (context_len_of(sglang), max_num_seqs_of(sglang)) == (65536, 32)
    assert (context_len_of(llama), max_num_seqs_of(llama)) == (65536, 4)
    assert context_len_of({"context_len": 32768}) == 32768
    assert context_len_of(json.dumps({"flags": ["--max-model-len", "65536"]})) == 65536


def test_an_argv_read_again_is_read_as_it_is_now_and_each_reading_is_its_own_list():
    flags = ["--max-num-seqs", "8", "--enforce-eager"]
    first = read_argv(flags)
    first.append(Arg("--extra"))
    assert read_argv(flags) == [Arg("--max-num-seqs", "8"), Arg("--enforce-eager")]
    flags[1] = "16"
    assert option_value(flags, ["--max-num-seqs"]) == "16"
    assert tokens_of(tuple(flags)) == flags and tokens_of(flags) is not tokens_of(flags)


def test_entries_that_are_not_text_are_read_as_their_own_text_however_they_compare():
    # 1 == 1.0 == True: an argv of them must not be mistaken for one read before.
    for value, text in ((1, "1"), (True, "True"), (1.0, "1.0"), ("1", "1")):
        assert read_argv(["--parallel", value]) == [Arg("--parallel", text)]
        assert option_value(["--parallel", value], ["--parallel"]) == text


def test_a_long_argv_is_read_like_a_short_one():
    long_value = "x" * (REMEMBERED_ARGV_CHARS + 1)
    for argv in (["--name", long_value, "--jinja"], f"--name {long_value} --jinja"):
        assert read_argv(argv) == [Arg("--name", long_value), Arg("--jinja")]
        assert read_argv(argv, DOCKER_BOOLEAN_OPTIONS) == [
            Arg("--name", long_value),
            Arg("--jinja"),
        ]
