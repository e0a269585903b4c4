"""``benchmarks/checkpointing.py``'s helpers, on a small MLP: no timing is checked, only what the table is made of."""

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("benchmarks_checkpointing", ROOT / "benchmarks" / "checkpointing.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


bench = _load()


def test_segment_counts_are_capped_at_the_chain_and_distinct():
    assert bench.segment_counts(128) == [1, 2, 4, 8, 16]
    assert bench.segment_counts(8) == [1, 2, 4, 8]
    assert bench.segment_counts(3) == [1, 2, 3]


def test_plan_budgets_are_the_shares_where_plans_fit_and_the_frontier_below():
    even = SimpleNamespace(saved_bytes=[100] * 16, chain_input_bytes=[100] * 16, flops=[1] * 16)
    budgets = bench.plan_activation_budgets(even)
    # of storing all 1600 bytes, 50 % fits a plan; 35 and 25 % do not (the lowest plan peaks at 600: three
    # kept inputs and two segments of 3 layers), so the frontier's plans follow, the lowest first, 800 not again
    assert budgets[0] == (800, True) and all(asked is False for _, asked in budgets[1:])
    frontier = [b for b, _ in budgets[1:]]
    assert frontier[0] == 600 and frontier == sorted(set(frontier)) and 800 not in frontier
    # one layer saves most of it: no plan goes below it, so the frontier's lowest plans fill in, all distinct
    lopsided = SimpleNamespace(saved_bytes=[1000, 10, 10, 10], chain_input_bytes=[10] * 4, flops=[1] * 4)
    budgets = bench.plan_activation_budgets(lopsided)
    assert all(asked is False for _, asked in budgets)
    values = [b for b, _ in budgets]
    assert len(set(values)) == len(values) >= 2 and values == sorted(values)  # the lowest first
    assert values[0] >= 1000


def test_torch_twin_has_the_same_weights_and_the_saved_bytes_counter_sees_every_relu_output():
    torch = pytest.importorskip("torch")
    w = bench.build_workload("mlp", layers=3)
    expected = w.model(w.x).detach().numpy()
    assert np.allclose(w.torch_model(w.torch_x).detach().numpy(), expected, rtol=1e-5, atol=1e-4)
    plain = bench.torch_contenders(w)[0]
    peak = bench.torch_activation_peak(plain, w)
    layer_output = bench.BATCH["mlp"] * bench.MLP_WIDTH * 4
    # 3 ReLU outputs kept for backward, and the MSE loss's difference (also one layer output) is counted once
    assert 3 * layer_output <= peak <= 5 * layer_output
    assert torch.is_grad_enabled()


def test_a_small_run_makes_every_row_and_the_report():
    results = bench.run_benchmark(models=("mlp",), rounds=1, steps=1, layers=2)
    w, mine, theirs = results["mlp"]
    labels = [c.label for c in mine]
    assert labels[:5] == ["no checkpointing", "1 segment", "2 segments", "4 segments", "selective (save_expensive)"]
    for c in mine + theirs:
        assert c.activation > 0 and len(c.times) == 1 and c.seconds > 0
    baseline, one_segment = mine[0], mine[1]
    assert one_segment.activation == baseline.activation  # one segment checkpoints nothing
    if importlib.util.find_spec("torch") is not None:
        assert [c.label for c in theirs] == labels[:4]
    else:  # PyTorch is optional: without it the benchmark runs minigrad's rows alone
        assert theirs == []
    report = bench.format_report(results, 1, 1, 1)
    assert "no 8 segments row" in report and "PCIe modelled" in report
