"""SGLang's list of one-click flags and the flags never handed out (docs/recipes.md §The
serve-flag policy)."""

from recipes.flag_checks import (
    ANY_INT,
    DEVICES,
    DRAFTER_PATH,
    FRACTION,
    SEQS,
    TOKENS,
    Rule,
    choice,
    either,
    hf_overrides,
    integer,
    mount_path,
    name,
    number,
    size,
    switch,
)

SGLANG_SWITCHES = (
    "--disable-radix-cache",
    "--enable-torch-compile",
    "--disable-cuda-graph",
    "--enable-dp-attention",
    "--enable-mixed-chunk",
    "--disable-overlap-schedule",
    "--enable-metrics",
    "--skip-server-warmup",
    "--enable-ep-moe",
    "--disable-custom-all-reduce",
    "--enable-multimodal",
    "--log-requests",
    "--enable-cache-report",
    "--enable-hierarchical-cache",
    "--disable-chunked-prefix-cache",
    "--enable-two-batch-overlap",
)
SGLANG_RULES: dict[str, Rule] = {
    **{flag: Rule(switch) for flag in SGLANG_SWITCHES},
    **{
        flag: Rule(DEVICES)
        for flag in (
            "--tp",
            "--tp-size",
            "--tensor-parallel-size",
            "--dp",
            "--dp-size",
            "--data-parallel-size",
            "--ep",
            "--ep-size",
            "--pp-size",
            "--pipeline-parallel-size",
        )
    },
    "--context-length": Rule(size(TOKENS)),
    "--mem-fraction-static": Rule(FRACTION),
    "--max-running-requests": Rule(SEQS),
    "--max-total-tokens": Rule(integer(1, 1 << 40)),
    "--chunked-prefill-size": Rule(integer(-1, TOKENS)),
    "--max-prefill-tokens": Rule(integer(1, TOKENS)),
    "--schedule-policy": Rule(choice("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
    "--schedule-conservativeness": Rule(number(0, 100)),
    "--kv-cache-dtype": Rule(
        choice("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")
    ),
    "--dtype": Rule(choice("auto", "half", "float16", "bfloat16", "float", "float32")),
    "--quantization": Rule(name),
    **{
        flag: Rule(name)
        for flag in (
            "--reasoning-parser",
            "--tool-call-parser",
            "--attention-backend",
            "--prefill-attention-backend",
            "--decode-attention-backend",
            "--sampling-backend",
            "--grammar-backend",
            "--mm-attention-backend",
            "--moe-runner-backend",
            "--moe-a2a-backend",
        )
    },
    "--torch-compile-max-bs": Rule(integer(1, 4096)),
    "--cuda-graph-max-bs": Rule(integer(1, 4096)),
    "--speculative-algorithm": Rule(
        choice("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "MTP", any_case=True)
    ),
    "--speculative-draft-model-path": Rule(
        choice(DRAFTER_PATH), refusal="a drafter other than the pinned one mounted at /drafter"
    ),
    "--speculative-num-steps": Rule(integer(1, 64)),
    "--speculative-eagle-topk": Rule(integer(1, 64)),
    "--speculative-num-draft-tokens": Rule(integer(1, 64)),
    "--chat-template": Rule(
        either(name, mount_path(files_only=True)),
        refusal="a chat template from anywhere but the model's or the drafter's own files",
    ),
    "--tokenizer-path": Rule(
        mount_path(), refusal="a tokenizer other than the model's or the drafter's own"
    ),
    "--tokenizer-mode": Rule(choice("auto", "slow")),
    "--load-format": Rule(choice("auto", "safetensors", "pt", "npcache", "gguf", "bitsandbytes")),
    "--json-model-override-args": Rule(hf_overrides),
    "--random-seed": Rule(ANY_INT),
    "--stream-interval": Rule(integer(1, 1000)),
    "--log-level": Rule(choice("debug", "info", "warning", "error", "critical")),
    "--watchdog-timeout": Rule(number(0, 1e6)),
    "--num-continuous-decode-steps": Rule(integer(1, 100)),
}
SGLANG_REFUSED = {
    "--trust-remote-code": "loads code: runs the Python files of the model repository",
    "--enable-custom-logit-processor": "loads code: lets requests send logit processors to run",
    "--lora-paths": "loads adapters from outside the model's pinned files",
    "--dist-init-addr": "connects to other machines over the network",
    "--model-loader-extra-config": "configures the loader to fetch or run other things",
}
