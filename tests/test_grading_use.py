"""use_exercise: a learner's exercise functions plugged into the library, and taken out again."""

import gc
from pathlib import Path

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.grading import use_exercise
from minigrad.grading.carve import exercise_functions
from minigrad.grading.manifest import PACKAGE_DIR, part_of
from minigrad.grading.use import library_module
from minigrad.tensor import autograd, grad_rules
from minigrad.tensor.ops.log_softmax import LogSoftmax

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "04_tensor_autograd.py"
STUBS = ROOT / "exercises" / "04_tensor_autograd.py"
RULES = ["unbroadcast", "matmul_backward", "sum_backward", "mean_backward"]


def _originals() -> dict:
    return {name: getattr(grad_rules, name) for name in RULES}


def _chapter_originals() -> dict:
    """Every function chapter 04's exercise files swap: the rules, LogSoftmax's methods, the backward driver."""
    return {**_originals(), "forward": LogSoftmax.forward, "backward": LogSoftmax.backward, "run_backward": autograd.run_backward}


def _train(steps: int = 5) -> list[float]:
    """A tiny MLP on fixed data: matmul, broadcasting bias, relu, log_softmax, mean — every chapter-04 rule."""
    gen = np.random.default_rng(0)
    x = mt.tensor(gen.standard_normal((16, 3)))
    y = mt.tensor(gen.integers(0, 2, size=16))
    params = [
        mt.tensor(gen.standard_normal((3, 8)) * 0.5, requires_grad=True), mt.zeros(8, requires_grad=True),
        mt.tensor(gen.standard_normal((8, 2)) * 0.5, requires_grad=True), mt.zeros(2, requires_grad=True),
    ]
    W1, b1, W2, b2 = params
    losses = []
    for _ in range(steps):
        logits = (x @ W1 + b1).relu() @ W2 + b2
        loss = -logits.log_softmax(dim=1)[mt.arange(16), y].mean() + 0.01 * (W1 * W1).sum()
        loss.backward()
        with mt.no_grad():
            for p in params:
                p.sub_(0.5 * p.grad)
                p.grad = None
        losses.append(loss.item())
    return losses


def test_the_functions_are_found_from_the_regions():
    part = part_of("4.1")
    assert exercise_functions(part.source) == RULES
    assert exercise_functions(part.source, "4.3") == ["sum_backward", "mean_backward"]
    assert library_module(part) is grad_rules
    assert exercise_functions(part_of("4.4").source) == ["LogSoftmax.forward", "LogSoftmax.backward"]
    assert exercise_functions(part_of("4.5").source) == ["run_backward"]
    assert library_module(part_of("4.5")) is autograd


def test_methods_are_found_by_qualified_name():
    names = exercise_functions(PACKAGE_DIR / "scalar" / "engine.py")
    assert "topological_order" in names
    assert any(name.startswith("Value.") for name in names)
    assert all(name.count(".") <= 1 for name in names)


def test_solutions_train_exactly_like_the_library():
    before = _originals()
    expected = _train()
    with use_exercise("04", path=SOLUTIONS) as mine:
        for name in RULES:
            assert getattr(grad_rules, name) is getattr(mine, name)
            assert getattr(grad_rules, name) is not before[name]
        assert _train() == expected
    assert _originals() == before


def test_stubs_raise_not_implemented_and_everything_is_restored():
    before = _originals()
    with pytest.raises(NotImplementedError, match=r"Exercise 4\.\d"):
        with use_exercise("04", path=STUBS):
            _train(1)
    assert _originals() == before
    assert _train(2) == _train(2)  # the library works again


def test_one_exercise_swaps_only_its_functions():
    before = _originals()
    with use_exercise("4.2", path=STUBS):
        assert grad_rules.matmul_backward is not before["matmul_backward"]
        assert {n for n in RULES if getattr(grad_rules, n) is not before[n]} == {"matmul_backward"}
        x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        (x * x + 1.0).sum().backward()  # no matmul: the library's rules still work
        assert x.grad.tolist() == [[2.0, 4.0], [6.0, 8.0]]
        with pytest.raises(NotImplementedError, match="Exercise 4.2"):
            (x @ x).sum().backward()
    assert _originals() == before


def test_the_learners_file_is_the_workspace_copy(monkeypatch):
    from minigrad.grading import workspace

    monkeypatch.chdir(ROOT / "chapters")
    with use_exercise("4.1") as mine:
        assert Path(mine.__file__).resolve() == workspace.locate() / "exercises" / STUBS.name


def test_a_chapter_of_several_files_swaps_them_all(monkeypatch):
    before = _chapter_originals()
    monkeypatch.chdir(ROOT / "chapters")
    with use_exercise("04") as mine:
        assert [Path(m.__file__).name for m in mine] == ["04_tensor_autograd.py", "04_log_softmax.py", "04_backward.py"]
        swapped = _chapter_originals()
        assert all(swapped[name] is not before[name] for name in before)
        assert LogSoftmax.forward is mine[1].LogSoftmax.forward and autograd.run_backward is mine[2].run_backward
    assert _chapter_originals() == before


def test_a_chapter_of_several_files_with_one_path_takes_the_file_of_that_name(tmp_path):
    with use_exercise("04", path=SOLUTIONS) as mine:  # named like the rules' file: only the rules are swapped
        assert grad_rules.unbroadcast is mine.unbroadcast
    with pytest.raises(ValueError, match="3 exercise files"):
        with use_exercise("04", path=tmp_path / "mine.py"):
            pass


def test_a_file_without_a_function_swaps_nothing(tmp_path):
    text = SOLUTIONS.read_text().replace("def mean_backward(", "def renamed_by_mistake(")
    broken = tmp_path / "04_tensor_autograd.py"
    broken.write_text(text)
    before = _originals()
    with pytest.raises(AttributeError, match="has no mean_backward"):
        with use_exercise("04", path=broken):
            pass
    assert _originals() == before


def test_nested_blocks_restore_in_order():
    before = _originals()
    with use_exercise("04", path=SOLUTIONS) as outer:
        with use_exercise("4.1", path=STUBS) as inner:
            assert grad_rules.unbroadcast is inner.unbroadcast
            assert grad_rules.matmul_backward is outer.matmul_backward
        assert grad_rules.unbroadcast is outer.unbroadcast
    assert _originals() == before


def test_swapped_methods_see_the_library_class_under_the_learners_name():
    """Module methods from solutions/05_module.py register the library's layers (isinstance(x, Module) holds)."""
    import minigrad.nn as nn
    from minigrad.nn import module

    original = vars(module.Module)["__setattr__"]
    with use_exercise("5.1", path=ROOT / "solutions" / "05_module.py") as mine:
        assert module.Module.__setattr__ is not original and mine.Module is module.Module
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert vars(module.Module)["__setattr__"] is original and mine.Module is not module.Module


def test_a_relative_path_names_the_workspace_copy(monkeypatch):
    """``use_exercise("8.3", "exercises/08_allocator.py")`` in a notebook run from chapters/ finds the learner's copy."""
    from minigrad.grading import workspace
    from minigrad.memory.allocator import caching_allocator

    monkeypatch.chdir(ROOT / "chapters")
    original = caching_allocator.CachingAllocator._split
    with use_exercise("8.3", "exercises/08_allocator.py") as mine:
        assert Path(mine.__file__).resolve() == workspace.locate() / "exercises" / "08_allocator.py"
        assert caching_allocator.CachingAllocator._split is mine.CachingAllocator.__dict__["_split"]
    assert caching_allocator.CachingAllocator._split is original
    with pytest.raises(FileNotFoundError, match="looked in"):
        with use_exercise("8.3", "exercises/no_such_file.py"):
            pass


def _tracked_mlp_step():
    from minigrad import nn, optim
    from minigrad.memory import track

    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    x, y = mt.randn(8, 20), mt.tensor(np.arange(8) % 4)
    with track(model, optimizer) as mem:
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return mem.peak, mem.peak_by_category, mem.by_category(), [row.phase for row in mem.timeline]


def test_the_tracker_counts_with_the_learners_engine():
    """8.5: track() runs the learner's count_events; the solution gives the library's figures, the stub raises."""
    from minigrad.memory import counting

    expected = _tracked_mlp_step()
    with use_exercise("8.5", ROOT / "solutions" / "08_counting.py") as mine:
        assert counting.count_events is mine.count_events
        assert _tracked_mlp_step() == expected
    with use_exercise("8.5", ROOT / "exercises" / "08_counting.py"):
        assert "Exercise 8.5" in _not_implemented(_tracked_mlp_step)
    gc.collect()
    assert _tracked_mlp_step() == expected  # the library's engine again, and nothing of the failed step counted


def _not_implemented(fn) -> str:
    """The message of the NotImplementedError ``fn()`` raises (its traceback, and the step's tensors, let go)."""
    try:
        fn()
    except NotImplementedError as err:
        return str(err)
    raise AssertionError("no NotImplementedError")


def test_the_allocator_runs_on_the_learners_size_rules():
    """8.6: CachingAllocator asks the learner's round_size, pool_for, segment_size and should_split."""
    from minigrad.memory.allocator import CachingAllocator, sizes

    with use_exercise("8.6", ROOT / "solutions" / "08_sizes.py") as mine:
        assert sizes.should_split is mine.should_split
        allocator = CachingAllocator()
        allocator.malloc(11 * 2**20 + 1)
        assert allocator.reserved_bytes == allocator.allocated_bytes == 12 * 2**20  # 1 MiB - 512 B left: no split
    with use_exercise("8.6", ROOT / "exercises" / "08_sizes.py"):
        with pytest.raises(NotImplementedError, match="Exercise 8.6"):
            CachingAllocator().malloc(100)
    assert sizes.round_size(100) == 512


def _scaler_trace() -> list:
    """GradScaler through clean and overflowing steps: the scale and growth tracker after each update."""
    from minigrad import nn, optim
    from minigrad.amp import GradScaler

    p = nn.Parameter(mt.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=8.0, growth_interval=2)
    trace = []
    for overflow in (False, False, True, False):
        opt.zero_grad()
        scaler.scale((p * p).sum()).backward()
        if overflow:
            p.grad._data[0] = np.inf
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker()))
    return trace


def test_the_grad_scaler_runs_on_the_learners_state_machine():
    """9.4: GradScaler.update asks the learner's update_scale."""
    from minigrad.amp import scaler_state

    with use_exercise("9.4", ROOT / "solutions" / "09_scaler_state.py") as mine:
        assert scaler_state.update_scale is mine.update_scale
        assert _scaler_trace() == [(8.0, 1), (16.0, 0), (8.0, 0), (8.0, 1)]
    with use_exercise("9.4", ROOT / "exercises" / "09_scaler_state.py"):
        assert "Exercise 9.4" in _not_implemented(_scaler_trace)
    assert _scaler_trace()[-1] == (8.0, 1)


def test_autocast_runs_the_learners_policy():
    """9.2: a region opened inside the block installs the learner's autocast_policy."""
    from minigrad.amp import autocast

    x = mt.tensor(np.ones((2, 3)), dtype=mt.float32)

    def product_dtype():
        with autocast("cpu", dtype=mt.bfloat16):
            return (x @ x.T).dtype

    with use_exercise("9.2", ROOT / "solutions" / "09_autocast_policy.py"):
        assert product_dtype() is mt.bfloat16
    with use_exercise("9.2", ROOT / "exercises" / "09_autocast_policy.py"):
        assert "Exercise 9.2" in _not_implemented(product_dtype)
    assert product_dtype() is mt.bfloat16


def _checkpointed_dropout_grad():
    """x.grad of a dropout block through checkpoint_reentrant (the recompute must draw the first run's mask)."""
    from minigrad.checkpoint.reentrant import checkpoint_reentrant
    from minigrad.nn.functional import dropout

    mt.manual_seed(0)
    x = mt.ones(4, 5, dtype=mt.float64, requires_grad=True)
    y = checkpoint_reentrant(lambda a: dropout(a * 2.0, 0.5), x)
    mask = (y.detach().numpy() != 0)
    y.sum().backward()
    return mask, x.grad.numpy()


def test_checkpoint_reentrant_runs_the_learners_function_and_rng_states():
    """10.1: CheckpointFunction's forward and backward are the learner's; 10.2: it captures and restores with the
    learner's capture_rng and restored_rng (reached through their module)."""
    from minigrad.checkpoint import rng_states
    from minigrad.checkpoint.reentrant import CheckpointFunction

    for exercise, file in (("10.1", "10_reentrant.py"), ("10.2", "10_rng_states.py")):
        with use_exercise(exercise, ROOT / "solutions" / file) as mine:
            if exercise == "10.1":
                assert CheckpointFunction.forward is mine.CheckpointFunction.forward
            else:
                assert rng_states.capture_rng is mine.capture_rng
            mask, grad = _checkpointed_dropout_grad()
            np.testing.assert_array_equal(grad, np.where(mask, 4.0, 0.0))  # dropout's scale 2, times the block's 2
        with use_exercise(exercise, ROOT / "exercises" / file):
            assert f"Exercise {exercise}" in _not_implemented(_checkpointed_dropout_grad)
    mask, grad = _checkpointed_dropout_grad()
    np.testing.assert_array_equal(grad, np.where(mask, 4.0, 0.0))


def _small_plan():
    """plan() for a 32-layer MLP at 70 % of its unplanned peak: the chain it picks (plan_chain reached through chain_dp)."""
    from minigrad import nn
    from minigrad.checkpoint.planner import plan
    from minigrad.memory import estimate

    mt.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(16) for m in (nn.Linear(16, 16), nn.ReLU())])
    return plan(model, 16, budget_bytes=int(0.7 * estimate(model, 16, 512).peak), batch_size=512).chain


def test_the_planner_runs_the_learners_dynamic_program():
    """10.4: plan() picks its segments with the learner's plan_chain (and _undominated)."""
    from minigrad.checkpoint import chain_dp

    expected = _small_plan()
    with use_exercise("10.4", ROOT / "solutions" / "10_chain_dp.py") as mine:
        assert chain_dp.plan_chain is mine.plan_chain and chain_dp._undominated is mine._undominated
        chain = _small_plan()
        assert chain.segments == expected.segments and chain.recompute_flops == expected.recompute_flops
    with use_exercise("10.4", ROOT / "exercises" / "10_chain_dp.py"):
        assert "Exercise 10.4" in _not_implemented(_small_plan)
    assert _small_plan().segments == expected.segments
