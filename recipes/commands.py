"""Commands that reproduce a recipe (docs/recipes.md, "Commands"): the Hugging Face download at
the pinned commit, the drafter's download, a `docker run` line, a compose snippet and the bare
metal line, per engine. They follow the serve-flag policy (recipes/policy.py): a flag it refuses
or does not know, and an unverified drafter, are left out of every command, with a note. Every
argument of a shell line goes through `shlex.quote`, and compose values are JSON strings with
`$` doubled, so no flag value can run anything on a reader's machine."""

from __future__ import annotations

import json
import re
import shlex

from recipes.argv import looks_like_option
from recipes.images import offered_image, stock_image
from recipes.normalise import RecipeSpec
from recipes.policy import DRAFTER_UNVERIFIED, check_recipe
from recipes.scrub import DRAFTER_PATH

VLLM_ENGINES = ("vllm", "aeon-vllm-ultimate", "vllm-rocm")
PORTS = {"sglang": 30000, "llama.cpp": 8080, "mlx": 8080}
DEFAULT_PORT = 8000
_SPLIT_GGUF = re.compile(r"(.*)-\d{5}-of-(\d{5})\.gguf")


def local_dir(repo: str) -> str:
    """Where the commands put a repository's files, relative to the working directory."""
    return "models/" + repo


def assemble_commands(
    spec: RecipeSpec,
    *,
    hf_repo: str,
    revision: str | None,
    model_file: str | None = None,
    drafter_verified: bool = False,
) -> dict:
    """The commands for serving `hf_repo` at `revision` with this recipe. Keys: hf_download,
    drafter_download, docker_run, compose, bare_metal (each a string or None), notes, and the
    policy's word: one_click (with its reasons) and left_out (the flags no command carries).
    `drafter_verified`: the drafter was found on the Hub at its pinned commit; otherwise it is
    neither downloaded, mounted nor named by any command."""
    notes: list[str] = []
    verdict = check_recipe(spec, drafter_verified=drafter_verified)
    drafter_ok, left_out = verdict.drafter_ok, verdict.left_out
    if left_out:
        notes.append(
            "Left out of these commands, so they do not reproduce the measured recipe: "
            + "; ".join(f"{flag.text} ({flag.message})" for flag in left_out)
            + "."
        )
    if not drafter_ok:
        notes.append(
            "The drafter is left out: "
            + next(r.message for r in verdict.reasons if r.code == DRAFTER_UNVERIFIED)
            + "."
        )
    spec = RecipeSpec(
        spec.engine,
        spec.image,
        spec.image_digest,
        tuple(verdict.offered_flags),
        spec.drafter if drafter_ok else None,
        spec.context_len,
    )
    image, image_note = offered_image(spec.image)
    if image_note:
        notes.append(image_note)
        image = stock_image(spec.engine)
    elif image is None and spec.engine in VLLM_ENGINES + ("sglang", "llama.cpp"):
        image = stock_image(spec.engine)
    if not revision:
        notes.append("The model's commit is not known yet: the download takes the default branch.")
    drafter = spec.drafter or {}
    if drafter.get("repo") and not drafter.get("revision"):
        notes.append(
            "The drafter was not pinned to a commit: its download takes the default branch."
        )

    model_dir = local_dir(hf_repo)
    drafter_dir = local_dir(drafter["repo"]) if drafter.get("repo") else None
    download = ["huggingface-cli", "download", hf_repo]
    if revision:
        download += ["--revision", revision]
    if spec.engine == "llama.cpp" and model_file:
        download += ["--include", _gguf_pattern(model_file)]
    download += ["--local-dir", model_dir]
    drafter_download = None
    if drafter_dir:
        argv = ["huggingface-cli", "download", drafter["repo"]]
        if drafter.get("revision"):
            argv += ["--revision", drafter["revision"]]
        drafter_download = shell_line(argv + ["--local-dir", drafter_dir])

    policy = {
        "one_click": verdict.as_json(),
        "left_out": [flag.as_json() for flag in left_out],
    }
    serve = _serve_argv(spec, hf_repo, model_file)
    if serve is None:
        notes.append(
            f"No command is assembled for the {spec.engine} engine; apply the flags by hand."
        )
        return {
            "hf_download": shell_line(download),
            "drafter_download": drafter_download,
            "docker_run": None,
            "compose": None,
            "bare_metal": None,
            "notes": notes,
            **policy,
        }
    in_container, entrypoint, program_args, bare = serve
    port = PORTS.get(spec.engine, DEFAULT_PORT)
    docker_run = compose = None
    if image and in_container is not None:
        mounts = [(f"./{model_dir}", "/model")] + (
            [(f"./{drafter_dir}", DRAFTER_PATH)] if drafter_dir else []
        )
        docker = ["docker", "run", "--rm", *_accelerator(spec, image), "-p", f"{port}:{port}"]
        for host, container in mounts:
            docker += ["-v", f"{host}:{container}:ro"]
        if entrypoint:
            docker += ["--entrypoint", entrypoint]
        docker += [image, *in_container, *program_args]
        docker_run = shell_line(docker)
        compose = _compose(spec, image, entrypoint, in_container + program_args, mounts, port)
    bare_args = [_drafter_on_disk(arg, drafter_dir) if drafter_dir else arg for arg in program_args]
    return {
        "hf_download": shell_line(download),
        "drafter_download": drafter_download,
        "docker_run": docker_run,
        "compose": compose,
        "bare_metal": shell_line(bare + bare_args) if bare is not None else None,
        "notes": notes,
        **policy,
    }


def shell_line(argv: list[str]) -> str:
    """One shell command, every argument quoted, an option per line for reading."""
    parts: list[str] = []
    for index, token in enumerate(argv):
        quoted = shlex.quote(token)
        if index and looks_like_option(token) and index > 2:
            parts.append(" \\\n  " + quoted)
        else:
            parts.append((" " if index else "") + quoted)
    return "".join(parts)


def _serve_argv(spec: RecipeSpec, hf_repo: str, model_file: str | None):
    """(argv inside the container, entrypoint, the engine's own args, bare-metal program) or
    None when the engine has no command we can assemble."""
    flags = list(spec.flags)
    model_dir = local_dir(hf_repo)
    if spec.engine in VLLM_ENGINES:
        args = ["--served-model-name", hf_repo, *flags]
        return (
            ["serve", "/model", "--host", "0.0.0.0", "--port", str(DEFAULT_PORT)],
            "vllm",
            args,
            ["vllm", "serve", model_dir, "--host", "127.0.0.1", "--port", str(DEFAULT_PORT)],
        )
    if spec.engine == "sglang":
        port = str(PORTS["sglang"])
        args = ["--served-model-name", hf_repo, *flags]
        return (
            ["python3", "-m", "sglang.launch_server", "--model-path", "/model"]
            + ["--host", "0.0.0.0", "--port", port],
            None,
            args,
            ["python3", "-m", "sglang.launch_server", "--model-path", model_dir]
            + ["--host", "127.0.0.1", "--port", port],
        )
    if spec.engine == "llama.cpp":
        port = str(PORTS["llama.cpp"])
        name = model_file or "model.gguf"
        args = ["--alias", hf_repo, *flags]
        return (
            ["-m", f"/model/{name}", "--host", "0.0.0.0", "--port", port],
            None,
            args,
            ["llama-server", "-m", f"{model_dir}/{name}", "--host", "127.0.0.1", "--port", port],
        )
    if spec.engine == "mlx":
        port = str(PORTS["mlx"])
        return (
            None,
            None,
            flags,
            ["mlx_lm.server", "--model", model_dir, "--host", "127.0.0.1", "--port", port],
        )
    return None


def _accelerator(spec: RecipeSpec, image: str) -> list[str]:
    if spec.engine == "vllm-rocm" or "rocm" in image:
        return ["--device", "/dev/kfd", "--device", "/dev/dri", "--ipc", "host"]
    if spec.engine == "llama.cpp" and "cuda" not in image:
        return []  # the CPU build
    return ["--gpus", "all", "--ipc", "host"]


def _gguf_pattern(model_file: str) -> str:
    """The file (or every part of a split GGUF) the download needs."""
    match = _SPLIT_GGUF.fullmatch(model_file)
    return f"{match.group(1)}-*-of-{match.group(2)}.gguf" if match else model_file


def _drafter_on_disk(arg: str, drafter_dir: str) -> str:
    """Bare metal has no /drafter mount: the speculative config names the downloaded folder."""
    if not arg.startswith("{"):
        return arg
    try:
        config = json.loads(arg)
    except ValueError:
        return arg
    if isinstance(config, dict) and config.get("model") == DRAFTER_PATH:
        config["model"] = drafter_dir
        return json.dumps(config, separators=(",", ":"))
    return arg


def _compose(
    spec: RecipeSpec,
    image: str,
    entrypoint: str | None,
    command: list[str],
    mounts: list[tuple[str, str]],
    port: int,
) -> str:
    lines = ["services:", "  serve:", f"    image: {_yaml(image)}"]
    if entrypoint:
        lines.append(f"    entrypoint: [{_yaml(entrypoint)}]")
    lines.append("    command:")
    lines += [f"      - {_yaml(arg)}" for arg in command]
    lines.append(f"    ports: [{_yaml(f'{port}:{port}')}]")
    lines.append("    volumes:")
    lines += [f"      - {_yaml(f'{host}:{container}:ro')}" for host, container in mounts]
    accelerator = _accelerator(spec, image)
    if "--ipc" in accelerator:
        lines.append("    ipc: host")
    if "--gpus" in accelerator:
        lines += [
            "    deploy:",
            "      resources:",
            "        reservations:",
            "          devices:",
            "            - driver: nvidia",
            "              count: all",
            "              capabilities: [gpu]",
        ]
    elif "--device" in accelerator:
        lines.append(f"    devices: [{_yaml('/dev/kfd')}, {_yaml('/dev/dri')}]")
    return "\n".join(lines) + "\n"


def _yaml(value: str) -> str:
    """A YAML double-quoted scalar (JSON is valid YAML) with compose's `$` interpolation off."""
    return json.dumps(value.replace("$", "$$"))
