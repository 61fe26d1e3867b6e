"""Model facts from a checkpoint's `config.json` and the Hub's weight bytes (docs/cohorts.md
§Rooflines): total and active parameters, the architecture behind them, bytes per parameter.

Pure Python on purpose: the weight check computes the facts of a verified commit with it, the
demo and the tests feed it dicts. No Django, no DB, no network.

Shapes understood: dense transformers; Mixtral and gpt-oss (`num_local_experts`), Qwen-MoE
(`num_experts`, `num_experts_per_tok`, `moe_intermediate_size`, a shared expert), DeepSeek
(`n_routed_experts`, `n_shared_experts`, first dense layers, MLA attention), Gemma 4 MoE (a dense
MLP beside the experts of every layer, `top_k_experts`), and any of them nested in `text_config`
as multimodal checkpoints have. Failing that, a repo name such as `Qwen3-30B-A3B` gives total
and active parameters. Anything else is unknown: no facts, never a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

# Beyond these a config is not describing a real model (or is hostile): unknown.
MAX_DIMENSION = 1_000_000
MAX_EXPERTS = 100_000
MAX_VOCAB = 10_000_000
# Bytes per parameter outside this band means config and weights disagree (fp32 is 4; a 1.58-bit
# checkpoint ~0.2): the facts are not trusted.
MIN_BYTES_PER_PARAM = 0.1
MAX_BYTES_PER_PARAM = 4.5

_EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "top_k_experts", "experts_per_token")
# `-30B-A3B`, `_235b_a22b`: total and active parameters in billions, from the repo name.
_NAME_PARAMS = re.compile(
    r"(?:^|[^0-9a-z.])(?P<total>\d+(?:\.\d+)?)b[-_]a(?P<active>\d+(?:\.\d+)?)b(?![0-9a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ModelFacts:
    """What the board knows of a weight set. `known` is False when the parameters could not be
    established (then nothing here may bound a figure); `note` says why, or how they were read."""

    known: bool
    note: str
    weight_bytes: int | None = None
    total_params: int | None = None
    active_params: int | None = None
    # The parameters of the routed experts (all of them), and how many a token picks of how many:
    # what a step touches grows with the tokens it carries (docs/cohorts.md §Rooflines).
    routed_expert_params: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    kind: str = ""  # "dense" or "moe"
    source: str = ""  # "config" or "name"
    architecture: dict = field(default_factory=dict)

    @property
    def bytes_per_param(self) -> float | None:
        if not self.known or not self.weight_bytes or not self.total_params:
            return None
        return self.weight_bytes / self.total_params

    @property
    def active_bytes(self) -> float | None:
        """The bytes one token's forward pass reads: active parameters × bytes per parameter."""
        per_param = self.bytes_per_param
        return None if per_param is None else self.active_params * per_param

    def to_json(self) -> dict:
        data = asdict(self)
        data["bytes_per_param"] = self.bytes_per_param
        data["active_bytes"] = self.active_bytes
        return data

    @classmethod
    def from_json(cls, data) -> ModelFacts:
        if not isinstance(data, dict) or not data:
            return unknown("no model facts")
        names = {f for f in cls.__dataclass_fields__}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return unknown("model facts unreadable")


def unknown(note: str, weight_bytes: int | None = None) -> ModelFacts:
    return ModelFacts(known=False, note=note, weight_bytes=weight_bytes)


def model_facts(config, weight_bytes: int | None, repo: str = "") -> ModelFacts:
    """The facts of one weight set: parameters from `config` (or the repo name), weight bytes as
    the Hub lists them. Never raises."""
    if not isinstance(weight_bytes, int) or isinstance(weight_bytes, bool) or weight_bytes <= 0:
        weight_bytes = None
    counted = _from_config(config) if isinstance(config, dict) else None
    if isinstance(counted, str):  # a config we cannot read: try the name before giving up
        reason = counted
        counted = None
    else:
        reason = "no config.json" if config is None else ""
    facts = counted or _from_name(repo, reason or "config.json not understood")
    if facts is None:
        return unknown(
            f"architecture unknown ({reason or 'config.json not understood'}; "
            "the repo name gives no -{total}B-A{active}B either)",
            weight_bytes,
        )
    if weight_bytes is None:
        return unknown("the Hub lists no weight bytes", None)
    facts = _with_bytes(facts, weight_bytes)
    per_param = facts.bytes_per_param
    if not MIN_BYTES_PER_PARAM <= per_param <= MAX_BYTES_PER_PARAM:
        return unknown(
            f"config and weights disagree: {per_param:.3g} bytes per parameter "
            f"({weight_bytes} bytes for {facts.total_params} parameters)",
            weight_bytes,
        )
    return facts


def _with_bytes(facts: ModelFacts, weight_bytes: int) -> ModelFacts:
    return ModelFacts(**{**asdict(facts), "weight_bytes": weight_bytes})


# --- from config.json ---------------------------------------------------------------------------


def _from_config(config: dict) -> ModelFacts | str | None:
    """The facts a config gives, or a reason (str) it gives none."""
    text = config.get("text_config")
    # Multimodal checkpoints nest the language model; some keep MoE keys at the root.
    layered = {**config, **text} if isinstance(text, dict) else config
    hidden = _count(layered, "hidden_size", "d_model", "n_embd")
    layers = _count(layered, "num_hidden_layers", "num_layers", "n_layer")
    heads = _count(layered, "num_attention_heads", "n_head")
    vocab = _count(layered, "vocab_size", limit=MAX_VOCAB)
    if None in (hidden, layers, heads, vocab):
        return "config.json lacks hidden size, layers, heads or vocabulary"
    kv_heads = _count(layered, "num_key_value_heads") or heads
    head_dim = _count(layered, "head_dim") or max(hidden // heads, 1)
    intermediate = _count(layered, "intermediate_size", "ffn_dim", "n_inner")
    tied = layered.get("tie_word_embeddings", True) is not False

    embeddings = vocab * hidden * (1 if tied else 2)
    attention = _attention_params(layered, hidden, heads, kv_heads, head_dim)
    experts = _first_count(layered, _EXPERT_COUNT_KEYS, limit=MAX_EXPERTS)
    moe_enabled = layered.get("enable_moe_block")
    if experts is None or experts <= 1 or moe_enabled is False:
        if any(isinstance(layered.get(k), int) and layered[k] > 1 for k in _EXPERT_COUNT_KEYS) and (
            moe_enabled is not False
        ):
            return "an expert count without a readable shape"
        if intermediate is None:
            return "config.json lacks the MLP size"
        total = embeddings + layers * (attention + 3 * hidden * intermediate)
        return ModelFacts(
            known=True,
            note="dense: every parameter is read for every token",
            total_params=total,
            active_params=total,
            kind="dense",
            source="config",
            architecture=_architecture(config, layered, hidden, layers, heads, kv_heads, vocab)
            | {"intermediate_size": intermediate, "tied_embeddings": tied},
        )

    top_k = _first_count(layered, _TOP_K_KEYS, limit=MAX_EXPERTS)
    expert_size = _count(layered, "moe_intermediate_size") or intermediate
    if top_k is None or expert_size is None or top_k > experts:
        return "an expert count without experts per token or expert size"
    per_expert = 3 * hidden * expert_size
    dense_layers = _dense_layer_count(layered, layers)
    moe_layers = layers - dense_layers
    # Always-on parts of a MoE layer: shared experts (DeepSeek, Qwen2-MoE) or Gemma 4's dense MLP.
    shared = 0
    shared_count = _count(layered, "n_shared_experts", "num_shared_experts")
    if shared_count:
        shared += shared_count * per_expert
    shared_size = _count(layered, "shared_expert_intermediate_size")
    if shared_size:
        shared += 3 * hidden * shared_size
    if moe_enabled is True and intermediate:
        shared += 3 * hidden * intermediate
    router = hidden * experts
    dense_mlp = 3 * hidden * (intermediate or expert_size)
    routed = moe_layers * experts * per_expert
    always = (
        embeddings + layers * attention + dense_layers * dense_mlp + moe_layers * (shared + router)
    )
    total = always + routed
    active = always + moe_layers * top_k * per_expert
    return ModelFacts(
        known=True,
        note=f"mixture of experts: {top_k} of {experts} experts per token",
        total_params=total,
        active_params=active,
        routed_expert_params=routed,
        experts=experts,
        experts_per_token=top_k,
        kind="moe",
        source="config",
        architecture=_architecture(config, layered, hidden, layers, heads, kv_heads, vocab)
        | {
            "experts": experts,
            "experts_per_token": top_k,
            "expert_intermediate_size": expert_size,
            "moe_layers": moe_layers,
            "dense_layers": dense_layers,
            "shared_params_per_layer": shared,
            "tied_embeddings": tied,
        },
    )


def _attention_params(cfg: dict, hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    kv_rank = _count(cfg, "kv_lora_rank")
    if kv_rank:  # DeepSeek multi-head latent attention
        rope = _count(cfg, "qk_rope_head_dim") or 0
        nope = _count(cfg, "qk_nope_head_dim") or head_dim
        v_dim = _count(cfg, "v_head_dim") or head_dim
        q_rank = _count(cfg, "q_lora_rank")
        q_dim = heads * (nope + rope)
        q = hidden * q_rank + q_rank * q_dim if q_rank else hidden * q_dim
        kv = hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim)
        return q + kv + heads * v_dim * hidden
    q_dim = heads * head_dim
    return 2 * hidden * q_dim + 2 * hidden * kv_heads * head_dim


def _dense_layer_count(cfg: dict, layers: int) -> int:
    first_dense = _count(cfg, "first_k_dense_replace")
    if first_dense:
        return min(first_dense, layers)
    only_mlp = cfg.get("mlp_only_layers")
    if isinstance(only_mlp, list):
        return min(sum(1 for item in only_mlp if isinstance(item, int)), layers)
    step = _count(cfg, "decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_freq")
    if step and step > 1:
        return layers - layers // step
    return 0


def _architecture(config, layered, hidden, layers, heads, kv_heads, vocab) -> dict:
    architectures = config.get("architectures")
    return {
        "model_type": _short_text(layered.get("model_type") or config.get("model_type")),
        "architectures": [_short_text(a) for a in architectures[:4] if isinstance(a, str)]
        if isinstance(architectures, list)
        else [],
        "hidden_size": hidden,
        "layers": layers,
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "vocab_size": vocab,
    }


def _short_text(value) -> str:
    return value[:80] if isinstance(value, str) else ""


def _count(cfg: dict, *keys: str, limit: int = MAX_DIMENSION) -> int | None:
    """The first of `keys` holding a positive whole number within `limit`, else None."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value) or value != int(value) or not 0 < value <= limit:
            continue
        return int(value)
    return None


def _first_count(cfg: dict, keys: tuple[str, ...], limit: int) -> int | None:
    return _count(cfg, *keys, limit=limit)


# --- from the repo name ---------------------------------------------------------------------------


def _from_name(repo: str, why: str) -> ModelFacts | None:
    name = repo.rsplit("/", 1)[-1] if isinstance(repo, str) else ""
    match = _NAME_PARAMS.search(name[:300])
    if match is None:
        return None
    total, active = float(match["total"]), float(match["active"])
    if not 0 < active <= total <= 100_000:
        return None
    return ModelFacts(
        known=True,
        note=f"from the repo name ({match.group(0).strip('-_')}): {why}",
        total_params=round(total * 1e9),
        active_params=round(active * 1e9),
        kind="moe" if active < total else "dense",
        source="name",
    )
