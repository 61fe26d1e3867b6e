"""The read benchmark's goals (docs/champions.md §The read benchmark) checked against what it
measured, and its table: every figure compared with the floor and across sizes round by round."""

import statistics

CHAMPION_APIS = ("pod_champions", "champions", "recipe")
LIST_APIS = ("benchmarks", "benchmarks_by_class", "benchmark_detail")
PAGES = (
    "board_page",
    "board_page_by_class",
    "hardware_page",
    "model_page",
    "benchmark_page",
    "recipe_page",
)


def paired_ratio(top: list[dict], bottom: list[dict], key: str = "requests_per_second") -> float:
    """The median over rounds of top / bottom, each round's pair measured minutes apart at most:
    drift of the machine between rounds cancels out. 0 when nothing can be compared."""
    ratios = [a[key] / b[key] for a, b in zip(top, bottom, strict=False) if b[key]]
    return statistics.median(ratios) if ratios else 0.0


def share_of_floor(result: dict) -> float:
    """The answer's requests per second over the floor's, paired round by round."""
    rounds = result.get("rounds")
    if rounds:
        return paired_ratio(rounds["answer"], rounds["floor"])
    floor = result["floor"]["requests_per_second"]
    return result["answer"]["requests_per_second"] / floor if floor else 0.0


def size_change(
    sizes: dict, name: str, smallest: str, largest: str, side: str, key: str = "requests_per_second"
) -> float | None:
    """How a figure of the read changed from the smallest to the largest size, paired round by
    round (both sizes ran in the same rounds); None when one side was not measured."""
    small, large = sizes[smallest][name], sizes[largest][name]
    if side not in small or side not in large:
        return None
    rounds = (small.get("rounds") or {}).get(side), (large.get("rounds") or {}).get(side)
    if all(rounds):
        ratio = paired_ratio(rounds[1], rounds[0], key)
    else:
        before = small[side].get(key) or 0
        ratio = large[side].get(key, 0) / before if before else 0.0
    return ratio - 1 if ratio else None


def goals(sizes: dict) -> list[dict]:
    """The goals of docs/champions.md, checked against what was measured."""
    found = []
    largest = max(sizes, key=int)
    smallest = min(sizes, key=int)
    for name, result in sizes[largest].items():
        answer = result["answer"]
        if name in CHAMPION_APIS:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 50 % of the floor, ≥ 1,000 req/s, p95 < 20 ms",
                    "measured": f"{share_of_floor(result):.0%}, "
                    f"{answer['requests_per_second']:.0f} req/s, p95 {answer['p95_ms']:.1f} ms",
                    "met": share_of_floor(result) >= 0.5
                    and answer["requests_per_second"] >= 1000
                    and answer["p95_ms"] < 20,
                }
            )
        elif name in LIST_APIS:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 25 % of the floor",
                    "measured": f"{share_of_floor(result):.0%}",
                    "met": share_of_floor(result) >= 0.25,
                }
            )
        elif name in PAGES:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 25 % of the floor, p95 < 50 ms",
                    "measured": f"{share_of_floor(result):.0%}, p95 {answer['p95_ms']:.1f} ms",
                    "met": share_of_floor(result) >= 0.25 and answer["p95_ms"] < 50,
                }
            )
        if (
            name in CHAMPION_APIS + LIST_APIS + PAGES
            and smallest != largest
            and name in sizes[smallest]
        ):
            change = size_change(sizes, name, smallest, largest, "answer")
            if change is not None:
                cpu = size_change(sizes, name, smallest, largest, "answer", "cpu_ms_per_request")
                found.append(
                    {
                        "goal": f"{name}: within 10 % between {smallest} and {largest}",
                        "measured": f"{change:+.0%}"
                        + (f" (CPU per request {cpu:+.0%})" if cpu is not None else ""),
                        "met": abs(change) <= 0.10,
                    }
                )
            change = size_change(sizes, name, smallest, largest, "uncached")
            if change is not None:
                missed = sizes[largest][name]["uncached"]
                found.append(
                    {
                        "goal": f"{name} uncached: within 10 % between {smallest} and {largest}",
                        "measured": f"{change:+.0%} ({missed['requests_per_second']:.0f} "
                        f"req/s, p95 {missed['p95_ms']:.1f} ms)",
                        "met": abs(change) <= 0.10,
                    }
                )
    return found


def report_lines(report: dict) -> list[str]:
    """The table of a report, with its goals and how to read it."""
    lines = []
    line = (
        f"{'size':>6} {'read':<20} {'bytes':>7} {'req/s':>8} {'floor':>8} {'%floor':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>6} {'cpu ms':>7} "
        f"{'fl cpu':>7} {'miss r/s':>8} {'miss p50':>8} {'miss p95':>8}"
    )
    lines.append(line)
    for size, results in report["sizes"].items():
        for name, result in results.items():
            answer, floor = result["answer"], result["floor"]
            miss = result.get("uncached") or {}
            lines.append(
                f"{size:>6} {name:<20} {result['bytes']:>7} "
                f"{answer['requests_per_second']:>8.0f} {floor['requests_per_second']:>8.0f} "
                f"{share_of_floor(result):>6.0%} {answer['p50_ms']:>7.1f} "
                f"{answer['p95_ms']:>7.1f} {answer['p99_ms']:>7.1f} "
                f"{answer['errors'] + answer['non_2xx_3xx']:>6} "
                f"{answer['cpu_ms_per_request']:>7.2f} {floor['cpu_ms_per_request']:>7.2f} "
                f"{miss.get('requests_per_second', 0):>8.0f} {miss.get('p50_ms', 0):>8.1f} "
                f"{miss.get('p95_ms', 0):>8.1f}"
            )
    for goal in report["goals"]:
        mark = "met " if goal["met"] else "MISS"
        lines.append(f"[{mark}] {goal['goal']}: {goal['measured']}")
    rounds = report["settings"]["rounds"]
    before, after = report.get("load_average_before"), report.get("load_average_after")
    lines.append(
        f"Each figure is the median of {rounds} rounds; in each round every size and the "
        "floor (the largest size's bytes from memory, on its server) ran once, all sizes "
        "served at once. cpu ms: CPU time of the server per request (fl: the floor's). "
        "miss: the same read on servers whose answer cache keeps nothing (every request "
        "reads the database and renders). Load average before "
        f"{before[0] if before else 0:.1f}, after {after[0] if after else 0:.1f}: numbers "
        "from a shared or busy machine are indicative only; measure on a quiet one."
    )

    return lines
