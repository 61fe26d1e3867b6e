"""Pages of the recipe lab (docs/lab.md, docs/website.md): thin views over board/lab_selectors.py."""

from django.http import Http404
from django.shortcuts import render

from board import lab_selectors
from board.lab_charts import drafter_charts


def _drafter_rows(view) -> tuple[list[int], list[dict]]:
    concs = sorted({p["conc"] for c in view.curves for p in c["points"]})
    rows = []
    for curve in view.curves:
        at = {p["conc"]: p for p in curve["points"]}
        rows.append(
            {
                "label": curve["label"],
                "cells": [
                    {**at[conc], "best": view.best.get(conc) == curve["label"]}
                    if conc in at
                    else None
                    for conc in concs
                ],
            }
        )
    return concs, rows


def model_class_page(request, canonical_id: str, slug: str):
    found = lab_selectors.model_class(canonical_id, slug)
    if found is None:
        raise Http404("no such model or hardware class")
    bench_model, hardware_class = found
    drafter = lab_selectors.drafter_view(bench_model, hardware_class)
    concs, rows = _drafter_rows(drafter)
    return render(
        request,
        "board/lab_model_class.html",
        {
            "bench_model": bench_model,
            "hardware_class": hardware_class,
            "counts": lab_selectors.model_class_counts(bench_model, hardware_class),
            "effects": lab_selectors.model_class_effects(bench_model, hardware_class),
            "drafter": drafter,
            "charts": drafter_charts(drafter),
            "concs": concs,
            "drafter_rows": rows,
        },
    )


def flag_page(request, flag: str):
    flag = flag[:200]
    return render(
        request,
        "board/lab_flag.html",
        {"flag": flag, "effects": lab_selectors.flag_effects(flag)},
    )


def lab_index(request):
    return render(request, "board/lab_index.html", {"flags": lab_selectors.measured_flags()})
