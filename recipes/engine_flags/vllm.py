"""The vLLM family's list of one-click flags (`vllm`, `aeon-vllm-ultimate`, `vllm-rocm`): each
flag's check, and the flags never handed out (docs/recipes.md §The serve-flag policy)."""

from recipes.flag_checks import (
    ANY_INT,
    DEVICES,
    DRAFTER_PATH,
    FRACTION,
    MODEL_PATH,
    SEQS,
    TOKENS,
    Rule,
    choice,
    either,
    hf_overrides,
    integer,
    json_bool,
    json_object,
    json_plain,
    matching,
    mount_path,
    name,
    number,
    size,
    switch,
)

SPEC_METHODS = (
    "dflash",
    "dspark",
    "eagle",
    "eagle3",
    "mtp",
    "deepseek_mtp",
    "qwen3_next_mtp",
    "ernie_mtp",
    "glm4_moe_mtp",
    "longcat_flash_mtp",
    "medusa",
    "mlp_speculator",
    "draft_model",
    "ngram",
    "suffix",
)
SPECULATIVE_CONFIG = json_object(
    {
        "method": choice(*SPEC_METHODS),
        "model": choice(DRAFTER_PATH),
        "num_speculative_tokens": integer(1, 64),
        "draft_tensor_parallel_size": integer(1, 64),
        "prompt_lookup_min": integer(1, 64),
        "prompt_lookup_max": integer(1, 64),
        "max_model_len": integer(1, 16 * 1024 * 1024),
        "disable_by_batch_size": integer(1, 65536),
        "quantization": name,
        "disable_padded_drafter_batch": json_bool,
        "attention_backend": name,  # the pods add it for DFlash on some builds
        "enforce_eager": json_bool,
    }
)
LIMIT_MM = either(
    json_object({kind: json_plain for kind in ("image", "video", "audio")}),
    matching(r"(?:image|video|audio)=\d{1,3}(?:,(?:image|video|audio)=\d{1,3})*", "image=N,…"),
)
COMPILATION_CONFIG = either(
    integer(0, 3),
    json_object(
        {
            "level": integer(0, 3),
            "mode": integer(0, 3),
            "cudagraph_mode": name,
            "cudagraph_capture_sizes": json_plain,
            "max_cudagraph_capture_size": integer(1, 65536),
            "use_cudagraph": json_bool,
            "full_cuda_graph": json_bool,
        }
    ),
)
SAMPLING = json_object(
    {
        key: number(-1000, 1000)
        for key in (
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
            "max_new_tokens",
        )
    }
)
VLLM_SWITCHES = (
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--enable-auto-tool-choice",
    "--enforce-eager",
    "--async-scheduling",
    "--no-async-scheduling",
    "--disable-log-requests",
    "--disable-log-stats",
    "--enable-log-requests",
    "--disable-custom-all-reduce",
    "--enable-expert-parallel",
    "--disable-cascade-attn",
    "--calculate-kv-scales",
    "--disable-sliding-window",
    "--skip-mm-profiling",
    "--disable-chunked-mm-input",
    "--enable-eplb",
    "--enable-dbo",
    "--enable-prompt-tokens-details",
    "--enable-force-include-usage",
    "--disable-fastapi-docs",
    "--enable-server-load-tracking",
    "--disable-uvicorn-access-log",
)
VLLM_RULES: dict[str, Rule] = {
    **{flag: Rule(switch) for flag in VLLM_SWITCHES},
    "--max-model-len": Rule(size(TOKENS)),
    "--gpu-memory-utilization": Rule(FRACTION),
    "--max-num-seqs": Rule(SEQS),
    "--max-num-batched-tokens": Rule(integer(1, TOKENS)),
    "--kv-cache-dtype": Rule(
        choice("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "bfloat16", "nvfp4")
    ),
    "--dtype": Rule(choice("auto", "half", "float16", "bfloat16", "float", "float32")),
    "--quantization": Rule(name),
    "-q": Rule(name),
    "--attention-backend": Rule(name),
    "--moe-backend": Rule(name),
    "--reasoning-parser": Rule(name),
    "--tool-call-parser": Rule(name),
    **{
        flag: Rule(DEVICES)
        for flag in (
            "--tensor-parallel-size",
            "-tp",
            "--pipeline-parallel-size",
            "-pp",
            "--data-parallel-size",
            "-dp",
            "--data-parallel-size-local",
            "-dpl",
        )
    },
    "--speculative-config": Rule(SPECULATIVE_CONFIG),
    "--limit-mm-per-prompt": Rule(LIMIT_MM),
    "--swap-space": Rule(number(0, 1024)),
    "--cpu-offload-gb": Rule(number(0, 4096)),
    "--block-size": Rule(choice("1", "8", "16", "32", "64", "128", "256")),
    "--seed": Rule(ANY_INT),
    "--max-seq-len-to-capture": Rule(integer(1, TOKENS)),
    "--max-cudagraph-capture-size": Rule(integer(1, 65536)),
    "--max-logprobs": Rule(integer(-1, 100000)),
    "--scheduling-policy": Rule(choice("fcfs", "priority")),
    "--generation-config": Rule(
        either(choice("auto", "vllm"), mount_path(roots=(MODEL_PATH,))),
        refusal="reads a generation config other than the model's own",
    ),
    "--override-generation-config": Rule(SAMPLING),
    "--mm-encoder-tp-mode": Rule(choice("weights", "data")),
    "--compilation-config": Rule(COMPILATION_CONFIG),
    "-O": Rule(COMPILATION_CONFIG),
    "--max-num-partial-prefills": Rule(integer(1, 1024)),
    "--max-long-partial-prefills": Rule(integer(1, 1024)),
    "--long-prefill-token-threshold": Rule(integer(0, TOKENS)),
    "--mamba-ssm-cache-dtype": Rule(choice("auto", "float16", "bfloat16", "float32")),
    "--chat-template": Rule(
        mount_path(files_only=True),
        refusal="a chat template from anywhere but the model's or the drafter's own files",
    ),
    "--chat-template-content-format": Rule(choice("auto", "string", "openai")),
    "--default-chat-template-kwargs": Rule(json_object()),
    "--mm-processor-kwargs": Rule(json_object()),
    "--tokenizer": Rule(
        mount_path(), refusal="a tokenizer other than the model's or the drafter's own"
    ),
    "--tokenizer-mode": Rule(choice("auto", "slow", "mistral", "hf")),
    "--hf-overrides": Rule(hf_overrides),
    "--rope-scaling": Rule(
        json_object(
            {
                "rope_type": name,
                "type": name,
                "factor": json_plain,
                "original_max_position_embeddings": json_plain,
            }
        )
    ),
    "--rope-theta": Rule(number(0, 1e12)),
    "--max-parallel-loading-workers": Rule(integer(1, 256)),
    "--load-format": Rule(
        choice(
            "auto",
            "safetensors",
            "pt",
            "npcache",
            "fastsafetensors",
            "gguf",
            "bitsandbytes",
            "mistral",
        )
    ),
    "--distributed-executor-backend": Rule(choice("mp", "uni", "ray")),
    "--uvicorn-log-level": Rule(choice("debug", "info", "warning", "error", "critical", "trace")),
    "--speculative-model": Rule(
        choice(DRAFTER_PATH), refusal="a drafter other than the pinned one mounted at /drafter"
    ),
}
VLLM_REFUSED = {
    "--trust-remote-code": "loads code: runs the Python files of the model repository",
    "--worker-extension-cls": "loads code: imports a worker extension class",
    "--worker-cls": "loads code: imports a worker class",
    "--tool-parser-plugin": "loads code: imports a tool parser from a file",
    "--reasoning-parser-plugin": "loads code: imports a reasoning parser from a file",
    "--logits-processors": "loads code: imports logits processor classes",
    "--logits-processor-pattern": "loads code: lets requests name logits processors to import",
    "--middleware": "loads code: imports ASGI middleware",
    "--lora-modules": "loads adapters from outside the model's pinned files",
    "--prompt-adapters": "loads adapters from outside the model's pinned files",
    "--qlora-adapter-name-or-path": "loads adapters from outside the model's pinned files",
    "--code-revision": "names code of the model repository to run",
    "--tokenizer-revision": "loads a tokenizer at another revision from the Hub",
    "--model-loader-extra-config": "configures the loader to fetch or run other things",
    "--allowed-local-media-path": "lets requests read files of the machine",
    "--allowed-media-domains": "lets the server fetch media from the network",
    "--kv-transfer-config": "connects to other machines over the network",
    "--kv-events-config": "publishes to the network",
    "--data-parallel-address": "connects to other machines over the network",
    "--data-parallel-rpc-port": "connects to other machines over the network",
}
