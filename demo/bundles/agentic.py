"""The agentic bundles' rows (one bundle per harness) and the multimodal ones (vision, audio,
video)."""

from __future__ import annotations

import json

from demo.bundles.common import (
    EASE,
    agentic_task_ids,
    case_row,
    checked,
    criterion,
    fit_units,
    html_page,
    rubric,
    section_rng,
)
from demo.bundles.perf import row_speed
from demo.catalogue import (
    AGENTIC_GOD_TASKS,
    AGENTIC_TASKS,
    DemoModel,
)


def agentic_rows(
    model: DemoModel, harness: str, score: float, seed: int, cells: dict
) -> tuple[list[dict], list[dict]]:
    rng = section_rng(model, seed, f"agentic|{harness}")
    tasks = [
        (tid, d, kind, i >= len(AGENTIC_TASKS))
        for i, (tid, (_, d, kind)) in enumerate(
            zip(agentic_task_ids(), AGENTIC_TASKS + AGENTIC_GOD_TASKS, strict=True)
        )
    ]
    eases = [0.25 if god else 0.9 - 0.02 * min(d, 10) for _, d, _, god in tasks]
    denoms = [d for _, d, _, _ in tasks]
    units = fit_units(rng, eases, denoms, score / 100 * len(tasks))
    cell = cells[("coding", 1)]
    broken = score <= 5
    setup_units = 0 if broken else (2 if rng.random() < 0.85 else 1)
    rows = [
        {
            "case_id": f"agentic.setup.{harness}",
            "category": "Agentic",
            "tier": 0,
            "status": "harness_error" if broken else "scored",
            "score": None if broken else setup_units / 2,
            "raw_output": json.dumps(
                {
                    "harness": harness,
                    "configured": not broken,
                    "config_path": f"~/.{harness}/config.json",
                }
            ),
            "evidence": [
                {
                    "criterion": "endpoint configured",
                    "ok": not broken,
                    "detail": "base_url and model alias written"
                    if not broken
                    else "config rejected",
                },
                {
                    "criterion": "tool call round-trip",
                    "ok": setup_units == 2,
                    "detail": "shell tool answered"
                    if setup_units == 2
                    else "no tool call observed",
                },
            ],
            "speed": {},
        }
    ]
    artifacts = []
    for (task_id, denom, kind, _), unit in zip(tasks, units, strict=True):
        score_row = 1.0 if unit == denom else round(unit / denom, 4)
        criteria = [
            {
                "criterion": f"check {i + 1} of {task_id}",
                "ok": i < unit,
                "detail": "found" if i < unit else "needle absent",
            }
            for i in range(denom)
        ]
        turns = rng.randint(3, 24)
        transcript = {
            "harness": harness,
            "task": task_id,
            "final_answer": "DONE" if unit else "I could not finish the task.",
            "files_written": [f"{task_id.split('-', 2)[-1]}.out"] if unit else [],
            "turns": turns,
            "tool_calls": turns + rng.randint(0, 12),
            "elapsed_s": round(rng.uniform(20, 400), 2),
            "transcript_tail": [f"[{harness}] step {t}: ran shell tool" for t in range(turns)],
        }
        rows.append(
            {
                "case_id": task_id,
                "category": "Agentic",
                "tier": 0,
                "status": "scored",
                "score": score_row,
                "raw_output": json.dumps(transcript)[:8000],
                "evidence": criteria,
                "speed": row_speed(rng, cell, rng.randint(400, 6000)),
            }
        )
        if kind:
            ok = score_row >= 0.5
            artifacts.append(
                {
                    "kind": kind,
                    "prompt_id": task_id,
                    "html": html_page(task_id, f"<div id=app>{kind}</div>") if ok else "",
                    "ok": ok,
                }
            )
    return rows, artifacts


def modality_rows(model: DemoModel, modality: str, cases, seed: int, cells: dict) -> list[dict]:
    rng = section_rng(model, seed, modality)
    target = min(95.0, max(5.0, model.composite + rng.uniform(-12, 8)))
    denoms = [2 if name.startswith(("describe.", "scene.", "qa.")) else 1 for name, _, _ in cases]
    units = fit_units(rng, [EASE[d] for _, _, d in cases], denoms, target / 100 * len(cases))
    cell = cells[("instruction", 1)]
    rows = []
    for (name, category, _), unit, denom in zip(cases, units, denoms, strict=True):
        score = round(unit / denom, 4)
        tier = 1 if denom > 1 else 0
        if tier:
            criteria = [
                criterion(
                    f"r{i + 1}",
                    f"Keyword group {i + 1} present?",
                    i < unit,
                    "keyword matched" if i < unit else "missing",
                    "tier0_shadow",
                    i == 0,
                )
                for i in range(denom)
            ]
            evidence = rubric(criteria, required_failed=unit == 0)
        else:
            evidence = checked(
                "closed_set", bool(unit), "slot matched" if unit else "slot mismatch"
            )
        rows.append(
            case_row(
                f"{modality}.{name}",
                category,
                tier,
                score=score,
                raw_output=f"<answer>{'ok' if unit else 'unsure'}</answer>",
                evidence=evidence,
                speed=row_speed(rng, cell, rng.randint(8, 120)),
            )
        )
    return rows
