"""MLX's (`mlx_lm.server`) list of one-click flags and the flags never handed out
(docs/recipes.md §The serve-flag policy)."""

from recipes.flag_checks import (
    DRAFTER_PATH,
    TOKENS,
    Rule,
    choice,
    integer,
    json_object,
    number,
    switch,
)

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
