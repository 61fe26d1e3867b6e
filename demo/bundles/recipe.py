"""The hardware, weights and serving recipe of a demo model, as its pod reports them."""

from __future__ import annotations

import hashlib

from demo.catalogue import (
    HARDWARE,
    DemoModel,
)

SERVED_ALIAS = "model-under-test"


def hardware_of(model: DemoModel) -> dict:
    facts = HARDWARE[model.detected_label]
    return {
        "label": None,
        "platform": facts["platform"],
        "machine": facts["machine"],
        "cpu_count": facts["cpu_count"],
        "gpus": list(facts["gpus"]),
        "detected_label": model.detected_label,
        "hardware_source": "detected-local",
    }


def weights_for(model: DemoModel) -> tuple[dict[str, str], str]:
    """(weights_per_file, weights_hash) of the model, hashed as docs/protocol.md §Weights says."""
    per_file = {
        path: hashlib.sha256(f"{model.hf_repo}@{model.hf_revision}/{path}".encode()).hexdigest()
        for path in model.weight_files
    }
    joined = ";".join(f"{path}:{per_file[path]}" for path in sorted(per_file))
    return per_file, hashlib.sha256(joined.encode()).hexdigest()


def _host_dir(model: DemoModel, repo: str) -> str:
    root = "/Users/aeon/aeon-models" if model.engine == "mlx" else "/home/aeon/aeon-models"
    return f"{root}/{repo.replace('/', '__')}"


def _with_context(argv: tuple[str, ...], context_len: int) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in ("--max-model-len", "--context-length", "--ctx-size", "-c"):
            out[i + 1] = str(context_len)
    return out


def _image_digest(image: str | None) -> str | None:
    if not image:
        return None
    repo, _, tag = image.rpartition(":")
    if not repo or "/" in tag:
        repo = image
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _command(model: DemoModel, flags: list[str], serve_args: list[str]) -> list[str]:
    model_dir = _host_dir(model, model.hf_repo)
    if model.engine == "mlx":
        return [
            "mlx_lm.server",
            "--model",
            model_dir,
            "--host",
            "127.0.0.1",
            "--port",
            str(model.port),
        ]
    docker = ["docker", "run", "--rm", "--name", "aeon-bench-serve", "--network", "host"]
    if model.detected_label != "x86_64 (CPU)":
        docker += ["--gpus", "all"]
    if model.engine == "sglang":
        docker += ["--shm-size", "16g"]
    docker += ["-v", f"{model_dir}:/model:ro"]
    if model.drafter_repo:
        docker += ["-v", f"/models/{model.drafter_repo.replace('/', '__')}:/drafter:ro"]
    if model.engine == "sglang":
        return docker + [
            model.image,
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/model",
            "--served-model-name",
            SERVED_ALIAS,
            "--host",
            "0.0.0.0",
            "--port",
            str(model.port),
            *serve_args,
        ]
    if model.engine == "llama.cpp":
        gguf = model.weight_files[0]
        return docker + [
            model.image,
            "-m",
            f"/model/{gguf}",
            "--alias",
            SERVED_ALIAS,
            "--host",
            "0.0.0.0",
            "--port",
            str(model.port),
            *serve_args,
        ]
    return docker + [
        "--entrypoint",
        "vllm",
        model.image,
        "serve",
        "/model",
        "--served-model-name",
        SERVED_ALIAS,
        "--host",
        "0.0.0.0",
        "--port",
        str(model.port),
        *flags,
    ]


def recipe_of(model: DemoModel, context_len: int) -> dict:
    tuning = _with_context(model.flags, context_len)
    serve_args = _with_context(model.serve_args, context_len)
    command = _command(model, tuning, serve_args)
    vllm_like = model.engine in ("vllm", "aeon-vllm-ultimate")
    flags = (
        (
            ["--served-model-name", SERVED_ALIAS, "--host", "0.0.0.0", "--port", str(model.port)]
            + tuning
        )
        if vllm_like
        else []
    )
    return {
        "served_alias": SERVED_ALIAS,
        "port": model.port,
        "source": "auto",
        "architecture": model.architecture,
        "context_len": context_len,
        "quant": model.quant,
        "modalities": list(model.modalities),
        "engine": model.engine,
        "serve_mode": model.serve_mode,
        "image": model.image,
        "command": command,
        "docker_run": " ".join(command) if model.serve_mode == "docker" else None,
        "container_name": "aeon-bench-serve" if model.serve_mode == "docker" else None,
        "image_overridden": False,
        "flags": flags,
        "drafter": (
            f"/models/{model.drafter_repo.replace('/', '__')}" if model.drafter_repo else None
        ),
        "drafter_repo": model.drafter_repo,
        "drafter_revision": model.drafter_revision,
        "spec_decode": model.spec_method,
        "spec_decode_method": model.spec_method,
        "spec_decode_n": model.spec_n,
        "spec_decode_note": (
            "lossless — draft tokens verified by the target model; speed only"
            if model.spec_method
            else None
        ),
        "image_digest": _image_digest(model.image),
    }
