"""What a one-click recipe may carry (docs/recipes.md §The serve-flag policy).

Pods apply the first entry of their champion list in one click and merge its flags into their
engine's argv, so what the board hands them must not load anybody's code, reach the network or
read files other than the model's and the drafter's own pinned ones (mounted at /model and
/drafter). This module says, per engine family, which flags a one-click recipe may carry, with a
check of each value; it names the flags that are never handed out; anything else is unknown and
keeps a recipe from being one-click. It also checks the image (recipes/images.py) and the
drafter (verified at a pinned commit on the Hub).

Pure Python: it reads flags with the one argv reader (recipes/argv.py) and touches no database.
The pods' list, the champion API, the commands and the pages all ask `check_recipe`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from recipes.argv import BOOLEAN_WORDS, Arg, parse_count, read_argv
from recipes.images import offered_image

__all__ = [
    "ENGINE_FAMILIES",
    "FlagCheck",
    "Reason",
    "Verdict",
    "check_flags",
    "check_recipe",
    "drafter_verified_by",
    "loads_drafter",
    "uses_drafter",
]

DRAFTER_PATH = "/drafter"
MODEL_PATH = "/model"

# Reason codes (stable: the APIs carry them).
REFUSED = "refused_flag"  # loads code, reaches the network or reads other files: never handed out
UNKNOWN = "unknown_flag"  # not on the engine's list: shown, flagged, left out
BAD_VALUE = "bad_value"  # on the list, but its value fails the check
IMAGE_WITHHELD = "image_withheld"  # measured on an image off the allowlist
DRAFTER_UNVERIFIED = "drafter_unverified"  # no drafter repository verified at a pinned commit
ENGINE_UNKNOWN = "engine_unknown"  # no policy for this engine: nothing it carries is checked

NEEDS_DRAFTER = "points at the drafter, which was not verified"

Check = Callable[[str | None], str | None]  # the value (None: a switch) → what is wrong, or None


@dataclass(frozen=True)
class Rule:
    """How one flag is checked; `refusal` set: a value failing the check is refused outright
    (it names code, a URL or a file other than the pinned ones), not merely a bad value."""

    check: Check
    refusal: str | None = None


@dataclass(frozen=True)
class FlagCheck:
    """One flag of a recipe with the policy's word on it."""

    arg: Arg
    status: str  # "allowed", or the reason code
    message: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == "allowed"

    @property
    def tokens(self) -> list[str]:
        return self.arg.tokens()

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def as_json(self) -> dict:
        return {"flag": self.text, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class Reason:
    """Why a recipe is not one-click."""

    code: str
    message: str
    flag: str | None = None

    def as_json(self) -> dict:
        return {"code": self.code, "flag": self.flag, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """The policy's word on a recipe: one-click when nothing stands in the way."""

    flags: tuple[FlagCheck, ...]
    reasons: tuple[Reason, ...]

    @property
    def one_click(self) -> bool:
        return not self.reasons

    @property
    def drafter_ok(self) -> bool:
        return not any(reason.code == DRAFTER_UNVERIFIED for reason in self.reasons)

    @property
    def kept(self) -> list[FlagCheck]:
        """The flags that pass (those naming an unverified drafter do not): what a copyable
        command may carry."""
        return [
            f for f in self.flags if f.allowed and (self.drafter_ok or not loads_drafter(f.arg))
        ]

    @property
    def offered_flags(self) -> list[str]:
        return [token for flag in self.kept for token in flag.tokens]

    @property
    def statuses(self) -> list[FlagCheck]:
        """Every flag in order with its status, a flag naming an unverified drafter as such."""
        kept = self.kept
        return [
            FlagCheck(flag.arg, DRAFTER_UNVERIFIED, NEEDS_DRAFTER)
            if flag.allowed and flag not in kept
            else flag
            for flag in self.flags
        ]

    @property
    def left_out(self) -> list[FlagCheck]:
        return [flag for flag in self.statuses if not flag.allowed]

    def as_json(self) -> dict:
        return {
            "one_click": self.one_click,
            "reasons": [reason.as_json() for reason in self.reasons],
        }


# --- value checks -------------------------------------------------------------------------------

_INT = re.compile(r"-?\d{1,12}")
_FLOAT = re.compile(r"-?(?:\d{1,12}\.?\d{0,12}|\.\d{1,12})(?:[eE][-+]?\d{1,3})?")
# A registered name (a parser, a backend, a quantisation method): no dots, no slashes, so never a
# module path or a file.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]{0,63}")
_MOUNT_PATH = re.compile(r"/(?:model|drafter)(?:/[A-Za-z0-9_.+-]+)*")


def switch(value: str | None) -> str | None:
    if value is None or value.lower() in BOOLEAN_WORDS:
        return None
    return "a switch takes no value"


def integer(low: int, high: int) -> Check:
    def check(value: str | None) -> str | None:
        if value is None or not _INT.fullmatch(value) or not low <= int(value) <= high:
            return f"a whole number from {low} to {high}"
        return None

    return check


def number(low: float, high: float, *, above_low: bool = False) -> Check:
    words = f"a number {'above' if above_low else 'from'} {low:g} {'up ' if above_low else ''}to {high:g}"

    def check(value: str | None) -> str | None:
        if value is None or not _FLOAT.fullmatch(value):
            return words
        parsed = float(value)
        if not math.isfinite(parsed) or parsed > high or parsed < low:
            return words
        if above_low and parsed == low:
            return words
        return None

    return check


def size(high: int) -> Check:
    def check(value: str | None) -> str | None:
        count = parse_count(value)
        if count is None or count > high:
            return f"a token count up to {high}"
        return None

    return check


def choice(*values: str, any_case: bool = False) -> Check:
    allowed = {v.lower() for v in values} if any_case else set(values)

    def check(value: str | None) -> str | None:
        if value is None or (value.lower() if any_case else value) not in allowed:
            return "one of " + ", ".join(values)
        return None

    return check


def name(value: str | None) -> str | None:
    if value is None or not _NAME.fullmatch(value):
        return "a registered name (letters, digits, _ + -)"
    return None


def matching(pattern: str, words: str) -> Check:
    compiled = re.compile(pattern)

    def check(value: str | None) -> str | None:
        return None if value is not None and compiled.fullmatch(value) else words

    return check


def mount_path(*, files_only: bool = False, roots: tuple[str, ...] = (MODEL_PATH, DRAFTER_PATH)):
    """The model's or the drafter's own files (the container mounts), nothing else."""

    def check(value: str | None) -> str | None:
        ok = (
            value is not None
            and _MOUNT_PATH.fullmatch(value) is not None
            and ".." not in value.split("/")
            and any(value == root or value.startswith(root + "/") for root in roots)
            and not (files_only and value in roots)
        )
        return None if ok else "only the model's or the drafter's own pinned files"

    return check


def either(*checks: Check) -> Check:
    def check(value: str | None) -> str | None:
        problems = [c(value) for c in checks]
        return None if None in problems else " or ".join(p for p in problems if p)

    return check


def _scalar_json(value) -> bool:
    """Numbers, booleans, null and registered names: nothing a loader could follow."""
    if value is None or isinstance(value, bool | int | float):
        return not isinstance(value, float) or math.isfinite(value)
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def _plain_json(value, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, dict):
        return all(
            _NAME.fullmatch(str(key)) and _plain_json(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return len(value) <= 64 and all(_plain_json(item, depth + 1) for item in value)
    return _scalar_json(value)


def json_object(keys: dict[str, Check] | None = None) -> Check:
    """A JSON object; with `keys`, only those keys, each value checked (as JSON text); without,
    any keys holding plain values (numbers, booleans, registered names)."""

    def check(value: str | None) -> str | None:
        try:
            parsed = json.loads(value) if value is not None else None
        except ValueError:
            return "a JSON object"
        if not isinstance(parsed, dict):
            return "a JSON object"
        if keys is None:
            return None if _plain_json(parsed) else "a JSON object of plain values"
        for key, item in parsed.items():
            if key not in keys:
                return f"a JSON object whose keys are among {', '.join(sorted(keys))}"
            text = item if isinstance(item, str) else json.dumps(item)
            problem = keys[key](text)
            if problem:
                return f"{key}: {problem}"
        return None

    return check


def json_plain(value: str | None) -> str | None:
    """A JSON value of plain values, for keys nested in a config."""
    try:
        parsed = json.loads(value) if value is not None else None
    except ValueError:
        parsed = value  # a bare string leaf
    return None if _plain_json(parsed) else "plain values only"


def json_int(low: int, high: int) -> Check:
    inner = integer(low, high)
    return lambda value: inner(value)


def json_bool(value: str | None) -> str | None:
    return None if value in ("true", "false") else "true or false"


class Refusal(str):
    """A check's answer meaning the value is refused outright (it names code), not just bad."""


def _has_code_keys(value, depth: int = 0) -> bool:
    """A config naming code: `auto_map` (classes to import from a repo), a class or module path."""
    if depth > 8:
        return True
    if isinstance(value, dict):
        return any(
            str(key).lower() in CODE_KEYS or _has_code_keys(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_has_code_keys(item, depth + 1) for item in value)
    return False


CODE_KEYS = frozenset({"auto_map", "trust_remote_code", "code_revision", "tokenizer_class"})


def hf_overrides(value: str | None) -> str | None:
    """Overrides of the model's config: a few numeric keys, never `auto_map` (which makes the
    loader import classes from the repository it names) nor anything naming a repo or a class."""
    try:
        parsed = json.loads(value) if value is not None else None
    except ValueError:
        return "a JSON object"
    if _has_code_keys(parsed):
        return REFUSE_CODE
    return json_object(HF_OVERRIDE_KEYS)(value)


REFUSE_CODE = Refusal("loads code: the config names classes to import (auto_map)")


# --- the engines' lists -------------------------------------------------------------------------

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
HF_OVERRIDE_KEYS = {
    "rope_scaling": json_plain,
    "rope_parameters": json_plain,
    "rope_theta": number(0, 1e12),
    "max_position_embeddings": integer(1, 16 * 1024 * 1024),
    "sliding_window": integer(0, 16 * 1024 * 1024),
    "use_sliding_window": json_bool,
    "max_window_layers": integer(0, 4096),
}
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
TOKENS = 16 * 1024 * 1024
SEQS = integer(1, 65536)
DEVICES = integer(1, 64)
ANY_INT = integer(-(2**31), 2**32)
FRACTION = number(0, 1, above_low=True)

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

LLAMA_SWITCHES = (
    "--jinja",
    "--no-jinja",
    "-cb",
    "--cont-batching",
    "-nocb",
    "--no-cont-batching",
    "--mlock",
    "--no-mmap",
    "--metrics",
    "--slots",
    "--no-slots",
    "--no-webui",
    "--swa-full",
    "-kvu",
    "--kv-unified",
    "--cpu-moe",
    "-cmoe",
    "--context-shift",
    "--no-context-shift",
    "-nkvo",
    "--no-kv-offload",
    "--no-warmup",
)
CACHE_TYPES = choice("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
LLAMA_RULES: dict[str, Rule] = {
    **{flag: Rule(switch) for flag in LLAMA_SWITCHES},
    "-fa": Rule(either(switch, choice("on", "off", "auto"))),
    "--flash-attn": Rule(either(switch, choice("on", "off", "auto"))),
    "-c": Rule(size(TOKENS)),
    "--ctx-size": Rule(size(TOKENS)),
    "-np": Rule(integer(1, 1024)),
    "--parallel": Rule(integer(1, 1024)),
    **{f: Rule(integer(-1, 1024)) for f in ("-t", "--threads", "-tb", "--threads-batch")},
    **{
        f: Rule(either(integer(-1, 100000), choice("auto", "all")))
        for f in ("-ngl", "--n-gpu-layers", "--gpu-layers")
    },
    **{f: Rule(integer(1, 1 << 20)) for f in ("-b", "--batch-size", "-ub", "--ubatch-size")},
    **{
        f: Rule(CACHE_TYPES)
        for f in (
            "-ctk",
            "--cache-type-k",
            "-ctv",
            "--cache-type-v",
            "-ctkd",
            "--cache-type-k-draft",
            "-ctvd",
            "--cache-type-v-draft",
        )
    },
    "-sm": Rule(choice("none", "layer", "row")),
    "--split-mode": Rule(choice("none", "layer", "row")),
    "-ts": Rule(matching(r"\d{1,6}(?:\.\d{1,6})?(?:[,/]\d{1,6}(?:\.\d{1,6})?){0,63}", "N,N,…")),
    "--tensor-split": Rule(
        matching(r"\d{1,6}(?:\.\d{1,6})?(?:[,/]\d{1,6}(?:\.\d{1,6})?){0,63}", "N,N,…")
    ),
    "-mg": Rule(integer(0, 63)),
    "--main-gpu": Rule(integer(0, 63)),
    "--reasoning-format": Rule(choice("none", "deepseek", "deepseek-legacy", "auto")),
    "--reasoning-budget": Rule(integer(-1, TOKENS)),
    "--chat-template": Rule(name, refusal="a chat template other than a built-in one"),
    "--chat-template-file": Rule(
        mount_path(files_only=True),
        refusal="a chat template from anywhere but the model's or the drafter's own files",
    ),
    **{
        f: Rule(integer(0, 64))
        for f in ("--draft-max", "--draft", "--draft-n", "--draft-min", "--draft-n-min")
    },
    "--draft-p-min": Rule(number(0, 1)),
    **{
        f: Rule(integer(-1, 100000))
        for f in ("-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft")
    },
    "-cd": Rule(size(TOKENS)),
    "--ctx-size-draft": Rule(size(TOKENS)),
    "--cache-reuse": Rule(integer(0, TOKENS)),
    "-n": Rule(integer(-2, TOKENS)),
    "--n-predict": Rule(integer(-2, TOKENS)),
    **{f: Rule(number(0, 100)) for f in ("--temp", "--top-p", "--min-p", "--repeat-penalty")},
    "--top-k": Rule(integer(0, 100000)),
    "-s": Rule(integer(-1, 2**32)),
    "--seed": Rule(integer(-1, 2**32)),
    "--rope-scaling": Rule(choice("none", "linear", "yarn")),
    **{f: Rule(number(0, 1e12)) for f in ("--rope-scale", "--rope-freq-base", "--rope-freq-scale")},
    "--yarn-orig-ctx": Rule(integer(0, TOKENS)),
    "-ot": Rule(
        matching(
            r"[\w.*+?\[\]()|^$\\-]{1,200}=[A-Za-z0-9_]{1,32}(?:,[\w.*+?\[\]()|^$\\-]{1,200}=[A-Za-z0-9_]{1,32}){0,31}",
            "PATTERN=BUFFER,…",
        )
    ),
    "--override-tensor": Rule(
        matching(
            r"[\w.*+?\[\]()|^$\\-]{1,200}=[A-Za-z0-9_]{1,32}(?:,[\w.*+?\[\]()|^$\\-]{1,200}=[A-Za-z0-9_]{1,32}){0,31}",
            "PATTERN=BUFFER,…",
        )
    ),
    "-ncmoe": Rule(integer(0, 1000)),
    "--n-cpu-moe": Rule(integer(0, 1000)),
    "--mmproj": Rule(
        mount_path(files_only=True), refusal="a projector other than the model's own file"
    ),
    "-dev": Rule(matching(r"[A-Za-z0-9]{1,16}(?:,[A-Za-z0-9]{1,16}){0,63}", "DEVICE,…")),
    "--device": Rule(matching(r"[A-Za-z0-9]{1,16}(?:,[A-Za-z0-9]{1,16}){0,63}", "DEVICE,…")),
    "-to": Rule(integer(0, 1 << 20)),
    "--timeout": Rule(integer(0, 1 << 20)),
    "--threads-http": Rule(integer(-1, 1024)),
    "--keep": Rule(integer(-1, TOKENS)),
    "--numa": Rule(choice("distribute", "isolate", "numactl")),
    "--poll": Rule(integer(0, 100)),
    "--prio": Rule(integer(-1, 3)),
}
_NETWORK = "fetches from the network"
LLAMA_REFUSED = {
    "--lora": "loads adapters from outside the model's pinned files",
    "--lora-scaled": "loads adapters from outside the model's pinned files",
    "--control-vector": "loads files from outside the model's pinned files",
    "--control-vector-scaled": "loads files from outside the model's pinned files",
    "-mu": _NETWORK,
    "--model-url": _NETWORK,
    "--mmproj-url": _NETWORK,
    **{
        f: "downloads another repository from the Hub"
        for f in (
            "-hf",
            "-hfr",
            "--hf-repo",
            "-hff",
            "--hf-file",
            "-hfd",
            "-hfrd",
            "--hf-repo-draft",
            "-hfv",
            "-hfrv",
            "--hf-repo-v",
            "-hffv",
            "--hf-file-v",
        )
    },
    "--rpc": "offloads to servers over the network",
    "--path": "serves files of the machine",
    "--grammar-file": "reads files from outside the model's pinned files",
    "-jf": "reads files from outside the model's pinned files",
    "--json-schema-file": "reads files from outside the model's pinned files",
    "--slot-save-path": "writes files of the machine",
}

MLX_RULES: dict[str, Rule] = {
    "--max-tokens": Rule(integer(1, TOKENS)),
    "--temp": Rule(number(0, 100)),
    "--top-p": Rule(number(0, 1)),
    "--min-p": Rule(number(0, 1)),
    "--top-k": Rule(integer(0, 100000)),
    "--num-draft-tokens": Rule(integer(1, 64)),
    "--draft-model": Rule(
        choice(DRAFTER_PATH), refusal="a drafter other than the pinned one mounted at /drafter"
    ),
    "--use-default-chat-template": Rule(switch),
    "--chat-template-args": Rule(json_object()),
    "--prompt-cache-size": Rule(integer(0, 1 << 20)),
    "--decode-concurrency": Rule(integer(1, 1024)),
    "--prompt-concurrency": Rule(integer(1, 1024)),
    "--log-level": Rule(choice("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", any_case=True)),
    "--pipeline": Rule(switch),
}
MLX_REFUSED = {
    "--trust-remote-code": "loads code: runs the Python files of the model repository",
    "--adapter-path": "loads adapters from outside the model's pinned files",
    "--chat-template": "a chat template the model's own files do not hold",
}


@dataclass(frozen=True)
class EnginePolicy:
    rules: dict[str, Rule]
    refused: dict[str, str]


VLLM = EnginePolicy(VLLM_RULES, VLLM_REFUSED)
ENGINE_FAMILIES: dict[str, EnginePolicy] = {
    "vllm": VLLM,
    "aeon-vllm-ultimate": VLLM,
    "vllm-rocm": VLLM,
    "sglang": EnginePolicy(SGLANG_RULES, SGLANG_REFUSED),
    "llama.cpp": EnginePolicy(LLAMA_RULES, LLAMA_REFUSED),
    "mlx": EnginePolicy(MLX_RULES, MLX_REFUSED),
}
# Refused whatever the engine (also for engines the board has no list for).
ALWAYS_REFUSED = {"--trust-remote-code": VLLM_REFUSED["--trust-remote-code"]}
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|^(?:www\.)", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s")


# --- the verdicts -------------------------------------------------------------------------------


def check_flags(engine: str, flags: Iterable[str]) -> tuple[FlagCheck, ...]:
    """Each flag of the recipe with its status (allowed, refused, unknown, bad value)."""
    policy = ENGINE_FAMILIES.get(engine)
    checked = []
    for arg in read_argv(list(flags)):
        checked.append(_check_arg(policy, arg))
    return tuple(checked)


def _check_arg(policy: EnginePolicy | None, arg: Arg) -> FlagCheck:
    if not arg.is_option:
        return FlagCheck(arg, UNKNOWN, "a stray word, not an option")
    value = arg.value
    refused = (policy.refused if policy is not None else {}).get(arg.name) or ALWAYS_REFUSED.get(
        arg.name
    )
    if refused:
        return FlagCheck(arg, REFUSED, refused)
    if value is not None and _URL.search(value):
        return FlagCheck(arg, REFUSED, "names a URL: reaches the network")
    if policy is None:
        return FlagCheck(arg, UNKNOWN, "the board has no flag list for this engine")
    rule = policy.rules.get(arg.name)
    if rule is None:
        return FlagCheck(arg, UNKNOWN, "not on this engine's list of one-click flags")
    if value is not None and _WHITESPACE.search(value) and not value.lstrip().startswith("{"):
        problem = "a value with spaces"
    else:
        problem = rule.check(value)
    if problem is None:
        return FlagCheck(arg, "allowed")
    if isinstance(problem, Refusal):
        return FlagCheck(arg, REFUSED, str(problem))
    if rule.refusal is not None:
        return FlagCheck(arg, REFUSED, rule.refusal)
    return FlagCheck(arg, BAD_VALUE, f"expects {problem}")


def loads_drafter(arg: Arg) -> bool:
    """The flag points the engine at the drafter mounted at /drafter."""
    value = arg.value or ""
    if value == DRAFTER_PATH or value.startswith(DRAFTER_PATH + "/"):
        return True
    return value.startswith("{") and f'"{DRAFTER_PATH}' in value


def uses_drafter(spec) -> bool:
    """A drafter model is loaded: named on the Hub, or mounted at /drafter by a flag."""
    if (spec.drafter or {}).get("repo"):
        return True
    return any(loads_drafter(arg) for arg in read_argv(list(spec.flags)))


_COMMIT = re.compile(r"[0-9a-f]{40}")


def drafter_verified_by(statuses: Iterable[str]) -> bool:
    """The weight check's drafter statuses of a benchmark's runs (`Run.drafter_status`) say the
    drafter was found on the Hub at its pinned commit: one run says so and none says otherwise."""
    found = set(statuses)
    return "pinned_ok" in found and not found & {"unpinned", "missing"}


def check_recipe(spec, *, drafter_verified: bool) -> Verdict:
    """Whether pods may apply `spec` (a RecipeSpec) in one click, and if not, why.

    `drafter_verified`: the drafter's repository was found on the Hub at the recipe's pinned
    commit (the weight check's drafter check, `drafter_status == "pinned_ok"` on the runs)."""
    flags = check_flags(spec.engine, spec.flags)
    reasons: list[Reason] = []
    if spec.engine not in ENGINE_FAMILIES:
        reasons.append(
            Reason(
                ENGINE_UNKNOWN, f"the board has no one-click policy for the {spec.engine} engine"
            )
        )
    for flag in flags:
        if not flag.allowed:
            reasons.append(Reason(flag.status, flag.message, flag.text))
    _, image_note = offered_image(spec.image)
    if image_note:
        reasons.append(
            Reason(
                IMAGE_WITHHELD,
                "measured on a container image off this board's allowlist: pods would run "
                "another image than the one measured",
            )
        )
    if uses_drafter(spec):
        drafter = spec.drafter or {}
        if not drafter.get("repo"):
            problem = "the recipe loads a drafter but names no Hugging Face repository for it"
        elif not _COMMIT.fullmatch(str(drafter.get("revision") or "")):
            problem = "the drafter is not pinned to a commit"
        elif not drafter_verified:
            problem = "the drafter was not verified on Hugging Face at its pinned commit"
        else:
            problem = None
        if problem:
            reasons.append(Reason(DRAFTER_UNVERIFIED, problem))
    return Verdict(flags, tuple(reasons))
