"""llama.cpp's (`llama-server`) list of one-click flags and the flags never handed out
(docs/recipes.md §The serve-flag policy)."""

from recipes.flag_checks import (
    TOKENS,
    Rule,
    choice,
    either,
    integer,
    matching,
    mount_path,
    name,
    number,
    size,
    switch,
)

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
