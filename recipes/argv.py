"""The one reader of serve-engine argv (docs/recipes.md, "Reading flags").

Every consumer that needs something from a recipe's flags or command goes through here: the
served context, the concurrency cap, scrubbing and command assembly. An argv list is read into
options (with their value, if any) and positionals, and can be written back token for token.

How a token is read:
- `--name=value` and `-n=value` carry their value inline.
- An option takes the next token as its value unless that token is itself an option. A token is
  an option when it starts with `-` and is not a number (`-1`, `-0.5`, `-1e-3` are values) and
  not a lone `-`.
- Known boolean switches (`--enforce-eager`, `--jinja`, `--no-*`, `--enable-*`, `--disable-*` …)
  never swallow the next token, except a boolean word (`true`, `off`, `auto` …) written for them.
- Entries such as `"--max-num-seqs 24"` (the pods' `custom_flags`) are split at their first space.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

# Switches of vLLM, SGLang and llama.cpp that take no value (docker's are apart: `-t` and `-v`
# mean other things there).
BOOLEAN_OPTIONS = frozenset(
    {
        # vLLM
        "--enforce-eager",
        "--trust-remote-code",
        "--async-scheduling",
        "--skip-tokenizer-init",
        "--use-v2-block-manager",
        "--headless",
        # SGLang
        "--skip-server-warmup",
        "--log-requests",
        # llama.cpp
        "--jinja",
        "-fa",
        "--flash-attn",
        "-cb",
        "--cont-batching",
        "-nocb",
        "--mlock",
        "--verbose",
        "-v",
        "--metrics",
        "--slots",
        "--embedding",
        "--embeddings",
        "--reranking",
        "--rerank",
        "--special",
        "-sp",
        "--swa-full",
        "--kv-unified",
        "-kvu",
        "--context-shift",
        "-nkvo",
        "--cpu-moe",
        "-cmoe",
        "--check-tensors",
        "--offline",
        "--log-disable",
        "--webui",
    }
)
DOCKER_BOOLEAN_OPTIONS = frozenset(
    {
        "--rm",
        "-d",
        "--detach",
        "-i",
        "-t",
        "-it",
        "-ti",
        "--interactive",
        "--tty",
        "--privileged",
        "--init",
        "--read-only",
        "-P",
        "--publish-all",
    }
)
BOOLEAN_PREFIXES = ("--no-", "--enable-", "--disable-")
BOOLEAN_WORDS = frozenset({"true", "false", "on", "off", "auto", "yes", "no", "1", "0"})
# A negative number is a value, not an option. No two quantifiers here can read the same digit
# (`\d+\.?\d*` could, and backtracked quadratically on `-111…1x`): linear time.
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
# One recipe's argv is read about ten times per bundle (schema, recipe, scrubbing, manifest):
# argvs of all-text entries up to this many characters are read once and remembered.
REMEMBERED_ARGV_CHARS = 16 * 1024
REMEMBERED_ARGVS = 256
SHELL_SPLIT_CHARS = 16 * 1024  # a whole-string argv longer than this is split at whitespace


@dataclass(frozen=True)
class Arg:
    """One read argument: an option (`name` set, `value` None for a switch) or a positional
    (`name` None, `value` its text). `inline` remembers `--name=value`."""

    name: str | None
    value: str | None = None
    inline: bool = False

    @property
    def is_option(self) -> bool:
        return self.name is not None

    def tokens(self) -> list[str]:
        """The argv tokens this argument was read from."""
        if self.name is None:
            return [self.value or ""]
        if self.value is None:
            return [self.name]
        return [f"{self.name}={self.value}"] if self.inline else [self.name, self.value]


def looks_like_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.fullmatch(token)


def is_boolean_option(name: str, switches: frozenset[str] = BOOLEAN_OPTIONS) -> bool:
    return name in switches or name.startswith(BOOLEAN_PREFIXES)


def tokens_of(argv: Iterable | str | None) -> list[str]:
    """An argv as a token list: a whole string is split the way a shell would; list entries that
    are an option and its value joined by a space are split at the first space."""
    key = _remembered_as(argv)
    return list(_remembered_tokens(key)) if key is not None else _tokens_of(argv)


def _remembered_as(argv) -> str | tuple[str, ...] | None:
    """The key an argv's reading is remembered under: the text itself, or its entries when all
    are text (exact types: `1` and `True` must not share a key); None: not remembered."""
    if type(argv) is str:
        return argv if len(argv) <= REMEMBERED_ARGV_CHARS else None
    if type(argv) not in (list, tuple) or len(argv) > REMEMBERED_ARGV_CHARS:
        return None
    if all(type(item) is str for item in argv) and sum(map(len, argv)) <= REMEMBERED_ARGV_CHARS:
        return tuple(argv)
    return None


@lru_cache(maxsize=REMEMBERED_ARGVS)
def _remembered_tokens(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_tokens_of(key))


@lru_cache(maxsize=REMEMBERED_ARGVS)
def _remembered_args(key: str | tuple[str, ...], switches: frozenset[str]) -> tuple[Arg, ...]:
    return tuple(_read_tokens(list(_remembered_tokens(key)), switches))


def _tokens_of(argv: Iterable | str | None) -> list[str]:
    if argv is None:
        return []
    if isinstance(argv, str):
        # shlex builds each token a character at a time (quadratic in a token's length): a
        # command longer than any real one is split at whitespace instead (linear time).
        if len(argv) > SHELL_SPLIT_CHARS:
            return argv.split()
        try:
            return shlex.split(argv)
        except ValueError:
            return argv.split()
    tokens: list[str] = []
    for item in argv:
        if item is None or isinstance(item, dict | list):
            continue
        text = item if isinstance(item, str) else str(item)
        head = text.split("=", 1)[0]
        if looks_like_option(text) and " " in head:
            name, value = text.split(" ", 1)
            tokens.extend([name, value.strip()])
        else:
            tokens.append(text)
    return tokens


def read_argv(argv: Iterable | str | None, switches: frozenset[str] = BOOLEAN_OPTIONS) -> list[Arg]:
    """Options and positionals in order (see the module docstring for the rules); `switches`
    are the options known to take no value (the engines' by default, docker's for docker)."""
    key = _remembered_as(argv)
    if key is not None and type(switches) is frozenset:
        return list(_remembered_args(key, switches))
    return _read_tokens(tokens_of(argv), switches)


def _read_tokens(tokens: list[str], switches: frozenset[str]) -> list[Arg]:
    args: list[Arg] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not looks_like_option(token):
            args.append(Arg(None, token))
            continue
        name, sep, inline = token.partition("=")
        if sep:
            args.append(Arg(name, inline, inline=True))
            continue
        following = tokens[index] if index < len(tokens) else None
        if following is None or looks_like_option(following):
            args.append(Arg(name))
        elif is_boolean_option(name, switches) and following.lower() not in BOOLEAN_WORDS:
            args.append(Arg(name))
        else:
            args.append(Arg(name, following))
            index += 1
    return args


def write_argv(args: Iterable[Arg]) -> list[str]:
    return [token for arg in args for token in arg.tokens()]


def option_value(argv: Iterable | str | None, names: Iterable[str]) -> str | None:
    """The value of the last of `names` given with a value (argparse: the last one wins)."""
    wanted = set(names)
    value = None
    for arg in read_argv(argv):
        if arg.name in wanted and arg.value is not None:
            value = arg.value
    return value


# Context length as each engine spells it (docs/recipes.md, "Served context").
CONTEXT_OPTIONS = ("--max-model-len", "--context-length", "--ctx-size", "-c")
# The most sequences served at once: vLLM, SGLang, llama.cpp.
CONCURRENCY_OPTIONS = ("--max-num-seqs", "--max-running-requests", "--parallel", "-np")
_SIZE = re.compile(r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)([kKmM]?)")
_SIZE_UNITS = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}
MAX_COUNT_DIGITS = 30  # beyond any column: the caller's range check refuses it


def parse_count(text: str | None) -> int | None:
    """A positive integer as engines accept it: `65536`, `64k` (×1000), `64K` (×1024), `6.5e4`.
    Exact however large, so a range check can refuse it; absurd sizes come back as 10**30."""
    if text is None:
        return None
    match = _SIZE.fullmatch(text.strip())
    if not match:
        return None
    number = Decimal(match.group(1))
    if number.adjusted() >= MAX_COUNT_DIGITS - 7:  # the largest unit is below 10**7
        return 10**MAX_COUNT_DIGITS
    value = int(number * _SIZE_UNITS[match.group(2)])
    return value if value > 0 else None


def context_len_from(argv: Iterable | str | None) -> int | None:
    return parse_count(option_value(argv, CONTEXT_OPTIONS))


def max_num_seqs_from(argv: Iterable | str | None) -> int | None:
    value = option_value(argv, CONCURRENCY_OPTIONS)
    if value is None or not re.fullmatch(r"[0-9]{1,9}", value.strip()):
        return None
    count = int(value)
    return count if count > 0 else None


# --- engine argv out of a full command line ------------------------------------------------------

_DOCKER_PROGRAMS = ("docker", "podman", "nerdctl")


def engine_args(command: Iterable | str | None) -> list[str]:
    """The engine's own arguments inside a full command (`docker run … IMAGE serve /model
    --flags`, `python3 -m sglang.launch_server --flags`, `llama-server -m x.gguf --flags` …):
    everything from the first option after the program, its model positional skipped."""
    tokens = tokens_of(command)
    if not tokens:
        return []
    start = _after_image(tokens) if _basename(tokens[0]) in _DOCKER_PROGRAMS else 0
    rest = tokens[start:]
    index = 0
    while index < len(rest) and not looks_like_option(rest[index]):
        token = rest[index]
        index += 1
        if _basename(token).startswith("python") and index < len(rest) and rest[index] == "-m":
            index += 2  # python -m <module>
            break
        if token == "serve":
            if index < len(rest) and not looks_like_option(rest[index]):
                index += 1  # vllm serve <model>
            break
    return rest[index:]


def docker_image(command: Iterable | str | None) -> str | None:
    """The image a `docker run` command starts, if it is one."""
    tokens = tokens_of(command)
    if not tokens or _basename(tokens[0]) not in _DOCKER_PROGRAMS:
        return None
    start = _after_image(tokens)
    return tokens[start - 1] if 0 < start <= len(tokens) else None


def _after_image(tokens: list[str]) -> int:
    """Index just past the image of `docker run [options] IMAGE …` (0 when there is none)."""
    index = 1
    if index < len(tokens) and tokens[index] in ("run", "container"):
        index += 1 if tokens[index] == "run" else 2
    consumed = 0
    for arg in read_argv(tokens[index:], DOCKER_BOOLEAN_OPTIONS):
        consumed += len(arg.tokens())
        if not arg.is_option:
            return index + consumed
    return 0


def _basename(token: str) -> str:
    return token.rsplit("/", 1)[-1]
