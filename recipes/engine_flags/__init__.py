"""The engines' lists of one-click flags (docs/recipes.md §The serve-flag policy): per engine
family, the flags a one-click recipe may carry, each with a check of its value
(recipes/flag_checks.py), and the flags never handed out, each with why. Data only: the checking
is recipes/policy.py's."""

from recipes.engine_flags.llama_cpp import LLAMA_REFUSED, LLAMA_RULES
from recipes.engine_flags.mlx import MLX_REFUSED, MLX_RULES
from recipes.engine_flags.sglang import SGLANG_REFUSED, SGLANG_RULES
from recipes.engine_flags.vllm import VLLM_REFUSED, VLLM_RULES
from recipes.flag_checks import EnginePolicy

__all__ = ["ALWAYS_REFUSED", "ENGINE_FAMILIES"]

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
