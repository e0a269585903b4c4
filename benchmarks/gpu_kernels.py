"""minigrad's GPU kernels: against CuPy/cuBLAS on an NVIDIA GPU, or on the kernel simulator on the CPU.

On a GPU (CuPy sees a device) each library kernel, through its host wrapper,
is timed against the CuPy expression that computes the same thing (cuBLAS for
the matmul): median GPU time, effective bandwidth (the bytes the operation
must move at least: every input read once, every output written once) as
GB/s and as a share of the card's peak, and GFLOP/s; then one epoch of the
chapter-05 MLP and the chapter-06 CNN on MNIST with ``model.to("cuda")``
against PyTorch CUDA when it is installed.

On the CPU the same kernels run on the simulator at small sizes: simulated
threads per second, and the traffic each launch counted
(``jit.last_launch_stats()``). Every row also checks the result against the
reference (NumPy on the CPU, CuPy on the GPU). One table is printed; the CPU
run takes well under 2 minutes on 2 cores.

    python benchmarks/gpu_kernels.py [--target auto|gpu|simulator] [--epochs 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from minigrad.gpu import jit, kernels

# Public spec-sheet figures (NVIDIA's product pages and datasheets; TechPowerUp's GPU database for the
# consumer boards): memory bandwidth in GB/s, FP32 peak in TFLOP/s at the boost clock. Matched as
# substrings of the name CUDA reports, most specific first.
CARDS = [
    ("H200", 4800.0, 67.0),
    ("H100 PCIe", 2000.0, 51.2),
    ("H100 NVL", 3900.0, 60.0),
    ("H100", 3350.0, 67.0),
    ("A100 80GB PCIe", 1935.0, 19.5),
    ("A100-SXM4-80GB", 2039.0, 19.5),
    ("A100", 1555.0, 19.5),
    ("L40S", 864.0, 91.6),
    ("L4", 300.0, 30.3),
    ("A10", 600.0, 31.2),
    ("T4", 320.0, 8.1),
    ("V100", 900.0, 15.7),
    ("RTX 4090", 1008.0, 82.6),
    ("RTX 4060", 272.0, 15.11),
    ("RTX 3090", 936.0, 35.6),
    ("RTX 3060", 360.0, 12.74),
    ("GTX 1650", 128.1, 2.984),
    ("GTX 1050", 112.1, 1.862),
]


@dataclass
class Card:
    name: str
    bandwidth_gbs: float | None
    fp32_tflops: float | None
    source: str


def card_profile(name: str, properties: dict | None = None) -> Card:
    """The card's peak bandwidth and FP32 throughput: the spec table by name, else the bandwidth the device reports."""
    for key, bandwidth, tflops in CARDS:
        if key.lower() in name.lower():
            return Card(name, bandwidth, tflops, f"spec sheet ({key})")
    properties = properties or {}
    clock_khz, bus_bits = properties.get("memoryClockRate", 0), properties.get("memoryBusWidth", 0)
    if clock_khz and bus_bits:  # double data rate: two transfers per memory clock
        return Card(name, 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, None, "device properties (memory clock x bus)")
    return Card(name, None, None, "unknown card: no peak figures")


@dataclass
class Case:
    """One kernel: inputs of a given size, the library call, the reference, and what it must move and compute."""

    name: str
    size: Callable[[bool], tuple]  # on_gpu -> problem size
    inputs: Callable[[object, np.random.Generator, tuple], tuple]  # (xp, rng, size) -> arguments
    ours: Callable[..., object]
    reference: Callable[..., object]  # (xp, *arguments) -> the same result
    bytes_moved: Callable[[tuple], int]  # every input read once, every output written once
    flops: Callable[[tuple], float]  # floating-point operations, counted from the kernel's source
    rtol: float = 1e-5
    atol: float = 1e-6


def _normal(xp, rng, shape):
    return xp.asarray(rng.standard_normal(shape, dtype=np.float32))


def _uniform(xp, rng, shape):
    return xp.asarray(rng.random(shape, dtype=np.float32))


def _ce_inputs(xp, rng, size):
    rows, classes = size
    return _normal(xp, rng, (rows, classes)), xp.asarray(rng.integers(0, classes, rows))


def _ce_reference(xp, logits, targets):
    biggest = logits.max(1, keepdims=True)
    log_sum = xp.log(xp.exp(logits - biggest).sum(1, keepdims=True))
    loss = log_sum[:, 0] + (biggest[:, 0] - logits[xp.arange(len(targets)), targets])
    return loss.mean(keepdims=True), (biggest.astype(np.float64) + log_sum.astype(np.float64))[:, 0]


def _softmax_reference(xp, x):
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _ce_grad_inputs(xp, rng, size):
    logits, targets = _ce_inputs(xp, rng, size)
    return logits, targets, _ce_reference(xp, logits, targets)[1]


def _ce_grad_reference(xp, logits, targets, logsumexp):
    probabilities = xp.exp((logits.astype(np.float64) - logsumexp[:, None]).astype(np.float32))
    probabilities[xp.arange(len(targets)), targets] -= 1
    return probabilities / len(targets)


ADAM = dict(step=3, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


def _adam_reference(xp, param, grad, m, v):
    b1, b2, step = ADAM["beta1"], ADAM["beta2"], ADAM["step"]
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    m_hat, v_hat = m / (1 - b1**step), v / (1 - b2**step)
    return param - ADAM["lr"] * m_hat / (xp.sqrt(v_hat) + ADAM["eps"]), m, v


def _adam_ours(param, grad, m, v):
    kernels.fused_adam_step(param, grad, m, v, **ADAM)  # in place
    return param, m, v


def _unscale_ours(grads, inv_scale):
    return grads, kernels.unscale_and_check(grads, inv_scale)  # in place


def _unscale_reference(xp, grads, inv_scale):
    grads = grads * inv_scale
    return grads, (~xp.isfinite(grads).all()).astype(np.float32).reshape(1)  # the flag stays on the device


def _prod(size):
    return math.prod(size)


CASES = [
    Case("bias + ReLU forward", lambda gpu: (8192, 1024) if gpu else (64, 64),
         lambda xp, rng, s: (_normal(xp, rng, s), _normal(xp, rng, s[1])),
         kernels.fused_bias_relu, lambda xp, x, b: xp.maximum(x + b, 0),
         lambda s: 4 * (2 * _prod(s) + s[1]), lambda s: 2 * _prod(s)),
    Case("bias + ReLU backward", lambda gpu: (8192, 1024) if gpu else (64, 64),
         lambda xp, rng, s: (_normal(xp, rng, s), xp.maximum(_normal(xp, rng, s), 0)),
         kernels.fused_bias_relu_backward,
         lambda xp, g, out: (xp.where(out > 0, g, 0).astype(np.float32), xp.where(out > 0, g, 0).sum(0)),
         lambda s: 4 * (3 * _prod(s) + s[1]), lambda s: _prod(s), rtol=1e-4, atol=1e-4),
    Case("sum, shared-memory tree", lambda gpu: (1 << 24,) if gpu else (4096,),
         lambda xp, rng, s: (_uniform(xp, rng, s),), kernels.shared_memory_sum, lambda xp, x: x.sum(keepdims=True),
         lambda s: 4 * s[0], lambda s: s[0], rtol=1e-4),
    Case("sum, warp shuffles", lambda gpu: (1 << 24,) if gpu else (4096,),
         lambda xp, rng, s: (_uniform(xp, rng, s),), kernels.warp_shuffle_sum, lambda xp, x: x.sum(keepdims=True),
         lambda s: 4 * s[0], lambda s: s[0], rtol=1e-4),
    Case("tiled matmul", lambda gpu: (2048, 2048, 2048) if gpu else (64, 64, 64),
         lambda xp, rng, s: (_normal(xp, rng, s[:2]), _normal(xp, rng, s[1:])), kernels.tiled_matmul,
         lambda xp, a, b: a @ b, lambda s: 4 * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]),
         lambda s: 2 * _prod(s), rtol=1e-3, atol=1e-3),
    Case("transpose, padded tile", lambda gpu: (8192, 8192) if gpu else (64, 96),
         lambda xp, rng, s: (_normal(xp, rng, s),), kernels.shared_memory_transpose,
         lambda xp, x: xp.ascontiguousarray(x.T), lambda s: 8 * _prod(s), lambda s: 0, rtol=0, atol=0),
    Case("softmax rows", lambda gpu: (65536, 512) if gpu else (8, 256),
         lambda xp, rng, s: (_normal(xp, rng, s) * 5,), kernels.softmax_rows, _softmax_reference,
         lambda s: 8 * _prod(s), lambda s: 4 * _prod(s), rtol=1e-4, atol=1e-6),
    Case("softmax + CE forward", lambda gpu: (65536, 10) if gpu else (64, 10), _ce_inputs,
         kernels.softmax_cross_entropy, _ce_reference,
         lambda s: 4 * _prod(s) + 8 * s[0] + 8 * s[0], lambda s: 4 * _prod(s), rtol=1e-4, atol=1e-5),
    Case("softmax + CE backward", lambda gpu: (65536, 10) if gpu else (64, 10), _ce_grad_inputs,
         kernels.softmax_cross_entropy_grad, _ce_grad_reference, lambda s: 8 * _prod(s) + 8 * s[0] + 8 * s[0],
         lambda s: 4 * _prod(s), rtol=1e-4, atol=1e-10),  # gradients are ~1/rows: a relative check
    Case("Adam step", lambda gpu: (1 << 24,) if gpu else (4096,),
         lambda xp, rng, s: (_normal(xp, rng, s), _normal(xp, rng, s), _normal(xp, rng, s) * 0.1,
                             _uniform(xp, rng, s) * 0.01),
         _adam_ours, _adam_reference, lambda s: 7 * 4 * s[0], lambda s: 18 * s[0], rtol=1e-4, atol=1e-6),
    Case("unscale + inf check", lambda gpu: (1 << 24,) if gpu else (4096,),
         lambda xp, rng, s: (_normal(xp, rng, s), 0.5), _unscale_ours, _unscale_reference,
         lambda s: 8 * s[0], lambda s: s[0]),
]


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def _copies(args: tuple) -> tuple:
    return tuple(a.copy() if hasattr(a, "copy") else a for a in args)


def _matches(args: tuple, case: Case, xp, to_host) -> bool:
    """The library's result (on copies: some kernels work in place) against the reference's, within tolerance."""
    ours, reference = _as_tuple(case.ours(*_copies(args))), _as_tuple(case.reference(xp, *_copies(args)))
    return len(ours) == len(reference) and all(
        np.allclose(to_host(a), to_host(b), rtol=case.rtol, atol=case.atol) for a, b in zip(ours, reference)
    )


def gpu_unavailable() -> str | None:
    """Why the kernels cannot run on a GPU here, or None when they can."""
    try:
        import cupy
    except ImportError as error:
        return f'CuPy is not installed ({error}): pip install "minigrad[gpu]"'
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver, no device: CuPy raises its CUDARuntimeError
        return f"CuPy sees no GPU ({type(error).__name__}: {error})"
    return None if count > 0 else "CuPy sees no GPU (0 devices)"


def simulator_rows(seed: int) -> list[dict]:
    """Every kernel on the simulator at a small size: time, threads per second, the traffic it counted."""
    rows = []
    for case in CASES:
        size = case.size(False)
        args = case.inputs(np, np.random.default_rng(seed), size)
        start = time.perf_counter()
        case.ours(*args)
        seconds = time.perf_counter() - start
        stats = jit.last_launch_stats()
        ok = _matches(args, case, np, np.asarray)
        rows.append(dict(
            kernel=case.name, size="x".join(map(str, size)), launch=f"{stats.grid}x{stats.block}",
            threads=stats.threads_launched, seconds=seconds, threads_per_second=stats.threads_launched / seconds,
            global_load_bytes=stats.global_load_bytes, global_store_bytes=stats.global_store_bytes,
            shared_bytes=stats.shared_bytes, atomics=stats.atomics, barriers=stats.barriers,
            global_sectors=stats.global_sectors, sector_efficiency=stats.sector_efficiency,
            bank_conflict=stats.shared_max_conflict, once_each_bytes=case.bytes_moved(size),
            flop_per_byte=case.flops(size) / stats.global_bytes if stats.global_bytes else float("nan"), ok=ok,
        ))
    return rows


def print_simulator_table(rows: list[dict]) -> None:
    print("minigrad kernels on the simulator (CPU): one launch each; traffic counted by the simulator")
    header = (f"  {'kernel':<25} {'size':>9} {'threads':>7} {'time':>7} {'threads/s':>10} {'global load':>12} "
              f"{'global store':>12} {'sectors':>8} {'sector eff':>10} {'once each':>11} {'shared':>10} "
              f"{'banks':>5} {'atomics':>7} {'barriers':>8} {'FLOP/B':>6} {'check':>5}")
    print(header)
    for r in rows:
        banks = f"{r['bank_conflict']}-way" if r["bank_conflict"] else "-"
        print(f"  {r['kernel']:<25} {r['size']:>9} {r['threads']:>7,} {r['seconds']:>6.2f}s "
              f"{r['threads_per_second']:>10,.0f} {r['global_load_bytes']:>11,}B {r['global_store_bytes']:>11,}B "
              f"{r['global_sectors']:>8,} {r['sector_efficiency']:>10.1%} "
              f"{r['once_each_bytes']:>10,}B {r['shared_bytes']:>9,}B {banks:>5} {r['atomics']:>7,} {r['barriers']:>8,} "
              f"{r['flop_per_byte']:>6.2f} {'ok' if r['ok'] else 'FAIL':>5}")
    total = sum(r["seconds"] for r in rows)
    print(f"  time: wall time of the launch on the simulator ({total:.1f} s in all); once each: the traffic if every input "
          "element were read once and every output written once; sectors: the 32-byte sectors the warps' global "
          "loads and stores touched, sector eff: the share of their bytes the threads asked for (100% = coalesced); "
          "banks: the worst shared-memory bank conflict of a warp access (1-way = none); FLOP/B: FLOPs per "
          "requested byte the simulator counted (no cache); check: result vs NumPy")


def gpu_rows(seed: int, repeat: int) -> tuple[Card, list[dict]]:
    """Every kernel on the GPU at a large size against its CuPy/cuBLAS equivalent (median GPU time)."""
    import cupy
    from cupyx.profiler import benchmark

    properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = properties["name"].decode() if isinstance(properties["name"], bytes) else str(properties["name"])
    card = card_profile(name, properties)
    rows = []
    for case in CASES:
        size = case.size(True)
        args = case.inputs(cupy, np.random.default_rng(seed), size)
        ok = _matches(args, case, cupy, cupy.asnumpy)
        ours = float(np.median(benchmark(case.ours, args, n_repeat=repeat, n_warmup=3).gpu_times[0]))
        reference = float(np.median(
            benchmark(case.reference, (cupy, *args), n_repeat=repeat, n_warmup=3).gpu_times[0]))
        moved, flops = case.bytes_moved(size), case.flops(size)
        rows.append(dict(
            kernel=case.name, size="x".join(map(str, size)), seconds=ours, reference_seconds=reference,
            gbs=moved / ours / 1e9, reference_gbs=moved / reference / 1e9,
            peak_share=moved / ours / 1e9 / card.bandwidth_gbs if card.bandwidth_gbs else None,
            gflops=flops / ours / 1e9, ok=ok,
        ))
    return card, rows


# ---- MNIST epochs on the GPU: minigrad (model.to("cuda")) against PyTorch CUDA ----

def mnist_arrays(subset: bool = False):
    """Normalised float32 images (N, 1, 28, 28) and labels; the full set if on disk, else the shipped subset."""
    from minigrad.data import MNIST

    try:
        if subset:
            raise FileNotFoundError("the subset was asked for")
        splits, note = [MNIST(train=train, download=False) for train in (True, False)], "MNIST"
    except Exception:  # not on disk: the 5,000/1,000-image subset inside the package
        splits, note = [MNIST(train=train, subset=True) for train in (True, False)], "MNIST subset"
    arrays = [(((s.data.astype(np.float32)[:, None] / 255.0 - 0.1307) / 0.3081).astype(np.float32),
               np.asarray(s.targets, dtype=np.int64)) for s in splits]
    return arrays, note


def _minigrad_model(kind: str):
    from minigrad import nn

    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 10))


def _torch_model(kind: str):
    import torch.nn as tnn

    if kind == "mlp":
        return tnn.Sequential(tnn.Flatten(), tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 128), tnn.ReLU(),
                              tnn.Linear(128, 10))
    return tnn.Sequential(tnn.Conv2d(1, 16, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(16, 32, 5), tnn.ReLU(),
                          tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(512, 10))


WORKLOADS = {"mlp": ("MNIST MLP 784-256-128-10", 128, 1e-3), "cnn": ("MNIST CNN conv16-conv32-linear", 64, 2e-3)}


def _epochs(step, sync, batches, epochs: int) -> list[float]:
    for idx in batches[:5]:  # warm-up: kernel compilation, cuBLAS handles, the memory pool
        step(idx)
    sync()
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for idx in batches:
            step(idx)
        sync()
        times.append(time.perf_counter() - start)
    return times


def minigrad_epoch(kind: str, data, epochs: int, device: str = "cuda", sync=None) -> dict:
    """Train ``epochs`` epochs on ``device`` (batches uploaded one at a time, as a DataLoader hands them over).

    ``sync`` waits for the device's queued work (default: CuPy's); the tests
    pass the strict test device, which has no queue, to run this code on the CPU.
    """
    if sync is None:
        import cupy

        sync = cupy.cuda.runtime.deviceSynchronize
    import minigrad.gpu  # noqa: F401  (registers the "cuda" device)
    from minigrad import nn, optim
    from minigrad.tensor import manual_seed, no_grad, tensor

    (x, y), (xt, yt) = data
    _, batch, lr = WORKLOADS[kind]
    manual_seed(0)
    model = _minigrad_model(kind).to(device)
    opt = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(0).permutation(len(y))
    batches = [order[i : i + batch] for i in range(0, len(order), batch)]

    def step(idx):
        loss = loss_fn(model(tensor(x[idx], device=device)), tensor(y[idx], device=device))
        opt.zero_grad()
        loss.backward()
        opt.step()

    times = _epochs(step, sync, batches, epochs)
    model.eval()
    with no_grad():
        predicted = np.concatenate([model(tensor(xt[i : i + 1000], device=device)).cpu().numpy().argmax(1)
                                    for i in range(0, len(yt), 1000)])
    return dict(epoch_seconds=float(np.median(times)), accuracy=float((predicted == yt).mean()))


def torch_epoch(kind: str, data, epochs: int) -> dict:
    import torch

    (x, y), (xt, yt) = data
    _, batch, lr = WORKLOADS[kind]
    torch.manual_seed(0)
    model = _torch_model(kind).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(y)))
    batches = [order[i : i + batch] for i in range(0, len(order), batch)]

    def step(idx):
        loss = loss_fn(model(x[idx].cuda()), y[idx].cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()

    times = _epochs(step, torch.cuda.synchronize, batches, epochs)
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(xt).cuda()).argmax(1).cpu().numpy()
    return dict(epoch_seconds=float(np.median(times)), accuracy=float((predicted == yt).mean()))


def mnist_rows(epochs: int) -> list[dict]:
    data, note = mnist_arrays()
    rows = []
    for kind, (title, batch, _) in WORKLOADS.items():
        row = dict(kernel=f"{title}, batch {batch} ({note})", size=f"{len(data[0][1]):,} img")
        for key, run in (("minigrad", minigrad_epoch), ("torch", torch_epoch)):
            try:
                row[key] = run(kind, data, epochs)
            except ImportError as error:
                row[key] = dict(error=f"not installed ({error.name})")
            except Exception as error:  # report it in the table, run the rest
                row[key] = dict(error=f"{type(error).__name__}: {str(error).splitlines()[0][:100]}")
        rows.append(row)
    return rows


def print_gpu_table(card: Card, rows: list[dict], mnist: list[dict]) -> None:
    peak = f"{card.bandwidth_gbs:,.0f} GB/s" if card.bandwidth_gbs else "unknown bandwidth"
    flops = f", {card.fp32_tflops:g} TFLOP/s FP32" if card.fp32_tflops else ""
    print(f"minigrad on {card.name} ({peak}{flops}; {card.source})")
    print(f"  {'benchmark':<52} {'size':>14} {'minigrad':>10} {'reference':>10} {'ratio':>6} {'GB/s':>7} "
          f"{'% peak':>6} {'GFLOP/s':>8} {'check':>7}")
    for r in rows:
        share = f"{r['peak_share']:.0%}" if r["peak_share"] is not None else "-"
        print(f"  {r['kernel']:<52} {r['size']:>14} {r['seconds'] * 1e3:>8.3f}ms {r['reference_seconds'] * 1e3:>8.3f}ms "
              f"{r['seconds'] / r['reference_seconds']:>5.2f}x {r['gbs']:>7,.0f} {share:>6} {r['gflops']:>8,.0f} "
              f"{'ok' if r['ok'] else 'FAIL':>7}")
    for r in mnist:
        ours, torch = r["minigrad"], r["torch"]
        cells = [f"{d['epoch_seconds']:>8.2f}s" if "epoch_seconds" in d else f"{'-':>9}" for d in (ours, torch)]
        ratio = (f"{ours['epoch_seconds'] / torch['epoch_seconds']:>5.2f}x"
                 if "epoch_seconds" in ours and "epoch_seconds" in torch else f"{'-':>6}")
        accuracy = f"{ours['accuracy']:.1%}" if "accuracy" in ours else "-"
        print(f"  {r['kernel']:<52} {r['size']:>14} {cells[0]:>10} {cells[1]:>10} {ratio} {'':>7} {'':>6} {'':>8} "
              f"{accuracy:>7}")
        for key, d in (("minigrad", ours), ("PyTorch", torch)):
            if "error" in d:
                print(f"      {key}: {d['error']}")
    print("  kernels: median GPU time of the library's wrapper vs the CuPy expression computing the same (cuBLAS "
          "for the matmul); GB/s and % peak: the bytes the operation must move at least (inputs read once, outputs "
          "written once) per second; check: result vs the reference. MNIST: seconds per training epoch, minigrad "
          "with model.to('cuda') vs PyTorch CUDA; check: minigrad's test accuracy")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["auto", "gpu", "simulator"], default="auto",
                        help="auto: the GPU when CuPy sees one, else the simulator")
    parser.add_argument("--epochs", type=int, default=1, help="MNIST epochs per contender on the GPU (default 1)")
    parser.add_argument("--repeat", type=int, default=20, help="timed launches per kernel on the GPU (default 20)")
    parser.add_argument("--no-mnist", action="store_true", help="on the GPU, time the kernels only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    reason = gpu_unavailable() if args.target != "simulator" else "the simulator was asked for"
    if args.target == "gpu" and reason:
        print(f"gpu_kernels: no GPU to benchmark on: {reason}", file=sys.stderr)
        return 2
    if reason:
        if args.target == "auto":
            print(f"(no GPU: {reason}; running the kernels on the simulator)")
        rows = simulator_rows(args.seed)
        print_simulator_table(rows)
        results = dict(target="simulator", kernels=rows)
    else:
        card, rows = gpu_rows(args.seed, args.repeat)
        mnist = [] if args.no_mnist else mnist_rows(args.epochs)
        print_gpu_table(card, rows, mnist)
        results = dict(target="gpu", card=card.__dict__, kernels=rows, mnist=mnist)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
