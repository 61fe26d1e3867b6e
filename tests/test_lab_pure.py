"""The recipe lab's finding, pure (board/lab.py; docs/lab.md): pairs one flag apart within a pod,
the change oriented, effects with their spread, and the cost growing with recipes × flags."""

from board.lab import Change, LabEntry, effects_of, pairs_of

BASE = ("--max-num-seqs", "32", "--kv-cache-dtype", "auto", "--enable-prefix-caching")


def entry(benchmark, flags, *, pod="pod-a", throughput=100.0, composite=70.0, **more):
    recipe = "r-" + "|".join(flags)
    fields = dict(
        benchmark=benchmark,
        pod=pod,
        model="1",
        weight_set="w1",
        recipe=recipe,
        engine="vllm",
        image="vllm/vllm-openai",
        image_digest="",
        flags=tuple(flags),
        throughput=throughput,
        single_stream=40.0,
        ttft_ms=200.0,
        composite=composite,
    )
    fields.update(more)
    return LabEntry(**fields)


def with_value(flags, name, value):
    out = list(flags)
    out[out.index(name) + 1] = value
    return tuple(out)


def test_one_value_changed_gives_one_pair_with_sign_and_size():
    a = entry("b1", BASE, throughput=400.0)
    b = entry("b2", with_value(BASE, "--max-num-seqs", "64"), throughput=500.0, composite=69.0)
    [pair] = pairs_of([b, a])
    assert pair.change == Change("--max-num-seqs", "changed", "32", "64")
    assert (pair.base.benchmarks, pair.other.benchmarks) == (("b1",), ("b2",))
    assert pair.deltas["throughput"] == 1.25
    assert pair.deltas["quality"] == -1.0
    [effect] = effects_of([pair])
    axes = effect.axes()
    assert axes["throughput"]["median"] == 1.25 and axes["throughput"]["better"] is True
    assert axes["quality"]["median"] == -1.0 and axes["quality"]["better"] is False
    assert axes["latency"]["median"] == 1.0 and axes["latency"]["better"] is None
    assert (len(effect.pairs), effect.pods) == (1, 1)


def test_an_option_present_on_one_side_only_reads_as_added_either_way():
    without = tuple(f for f in BASE if f != "--enable-prefix-caching")
    later_without = [entry("b1", BASE, throughput=300.0), entry("b2", without, throughput=200.0)]
    [pair] = pairs_of(later_without)
    assert pair.change == Change("--enable-prefix-caching", "added", None, None)
    assert pair.base.benchmarks == ("b2",) and pair.deltas["throughput"] == 1.5


def test_two_flags_apart_is_no_pair():
    two = with_value(with_value(BASE, "--max-num-seqs", "64"), "--kv-cache-dtype", "fp8")
    assert pairs_of([entry("b1", BASE), entry("b2", two)]) == []


def test_pairs_stay_within_a_pod_and_two_pods_make_n_2():
    changed = with_value(BASE, "--max-num-seqs", "64")
    pairs = pairs_of(
        [
            entry("a1", BASE, pod="pod-a", throughput=400.0),
            entry("a2", changed, pod="pod-a", throughput=500.0),
            entry("b1", BASE, pod="pod-b", throughput=300.0),
            entry("b2", changed, pod="pod-b", throughput=330.0),
        ]
    )
    assert len(pairs) == 2  # not a1-b2 nor b1-a2: other machines measure machines
    [effect] = effects_of(pairs)
    axes = effect.axes()["throughput"]
    assert (len(effect.pairs), effect.pods) == (2, 2)
    assert (axes["min"], axes["max"]) == (1.1, 1.25)
    assert abs(axes["median"] - 1.175) < 1e-9


def test_other_weights_engine_or_image_are_no_experiment():
    changed = with_value(BASE, "--max-num-seqs", "64")
    for field, value in (("weight_set", "w2"), ("engine", "sglang"), ("image", "other/img")):
        assert pairs_of([entry("b1", BASE), entry("b2", changed, **{field: value})]) == [], field


def test_a_drafter_may_differ_only_with_the_speculative_config():
    spec = ("--speculative-config", '{"method":"dflash","num_speculative_tokens":11}')
    with_spec = BASE + spec
    n4 = BASE + ("--speculative-config", '{"method":"dflash","num_speculative_tokens":4}')
    [pair] = pairs_of([entry("b1", with_spec, drafter="n11"), entry("b2", n4, drafter="n4")])
    assert pair.change.flag == "--speculative-config"
    # The same flags but another drafter repo: no flag changed, no pair.
    assert (
        pairs_of([entry("b1", with_spec, drafter="x"), entry("b2", with_spec, drafter="y")]) == []
    )
    # Another flag changed while the drafter differs too: two things changed, no pair.
    changed = with_value(with_spec, "--max-num-seqs", "64")
    assert pairs_of([entry("b1", with_spec, drafter="x"), entry("b2", changed, drafter="y")]) == []


def test_repeats_of_one_recipe_are_one_side_at_their_median():
    changed = with_value(BASE, "--max-num-seqs", "64")
    [pair] = pairs_of(
        [
            entry("b1", BASE, throughput=100.0),
            entry("b2", BASE, throughput=120.0),
            entry("b3", BASE, throughput=110.0),
            entry("b4", changed, throughput=220.0),
        ]
    )
    assert pair.base.benchmarks == ("b1", "b2", "b3") and pair.base.figures["throughput"] == 110.0
    assert pair.deltas["throughput"] == 2.0


def test_finding_pairs_compares_only_recipes_one_flag_apart(monkeypatch):
    """Recipes meet in hash buckets, never all against all: among 200 recipes pairwise two flags
    apart plus one true pair, exactly one comparison is made (counted, not timed)."""
    import board.lab as lab

    calls = {"n": 0}
    real = lab._derived_ok

    def counting(a, b, flag):
        calls["n"] += 1
        return real(a, b, flag)

    monkeypatch.setattr(lab, "_derived_ok", counting)
    unrelated = [entry(f"b{i}", BASE + (f"--x{i}", "1", f"--y{i}", "2")) for i in range(200)]
    pair = [entry("p1", BASE), entry("p2", with_value(BASE, "--max-num-seqs", "48"))]
    assert len(pairs_of(unrelated + pair)) == 1
    assert calls["n"] == 1
