"""The summary table of ``gpu_device_check.sh``: its steps' outcomes and the GPU benchmarks' results, as Markdown.

Reads the check's log folder: ``pytest.log`` (the `gpu`-marked tests) and
``gpu_kernels.json`` (written by ``gpu_kernels.py --json``); the shell
script passes each step's exit status and duration.

    python benchmarks/gpu_check_summary.py --logs DIR --gpu NAME --install LABEL SECONDS \\
        --pytest STATUS SECONDS --benchmarks STATUS SECONDS
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def pytest_outcome(log: Path) -> str:
    """The final counts line of a pytest run ("12 passed, 1 skipped in 9.1s"), or its last line."""
    lines = log.read_text().strip().splitlines() if log.exists() else []
    if not lines:
        return "no output"
    counts = re.compile(r"\d+ (passed|failed|errors?|skipped|deselected)")
    return next((line.strip("= ") for line in reversed(lines) if counts.search(line)), lines[-1])


def kernel_result(row: dict) -> str:
    share = f" = {row['peak_share']:.0%} of peak" if row.get("peak_share") is not None else ""
    return (f"{'ok' if row['ok'] else 'MISMATCH'}: {row['seconds'] * 1e3:.3f} ms vs CuPy "
            f"{row['reference_seconds'] * 1e3:.3f} ms ({row['seconds'] / row['reference_seconds']:.2f}x), "
            f"{row['gbs']:,.0f} GB/s{share}, {row['gflops']:,.0f} GFLOP/s")


def mnist_result(row: dict) -> str:
    cells = []
    for name, result in (("minigrad", row["minigrad"]), ("PyTorch", row["torch"])):
        if "epoch_seconds" in result:
            accuracy = f" ({result['accuracy']:.1%} test accuracy)" if "accuracy" in result else ""
            cells.append(f"{name} {result['epoch_seconds']:.2f} s/epoch{accuracy}")
        else:
            cells.append(f"{name}: {result['error']}")
    return "; ".join(cells)


def summary(logs: Path, gpu: str, install: tuple[str, str], pytest: tuple[str, str],
            benchmarks: tuple[str, str]) -> str:
    """The table; a step's status is its exit status as text ("0": passed; pytest "5": none passed, all skipped)."""
    verdict = {"0": "ok: ", "5": "FAILED, no gpu-marked test passed: "}.get(pytest[0], f"FAILED (exit {pytest[0]}): ")
    rows = [(install[0], "ok", install[1]), ("pytest -m gpu", verdict + pytest_outcome(logs / "pytest.log"), pytest[1])]
    heading = f"minigrad GPU device check: {gpu}"
    results_file = logs / "gpu_kernels.json"
    if results_file.exists():
        results = json.loads(results_file.read_text())
        card = results.get("card", {})
        if card.get("bandwidth_gbs"):
            heading += f" (peak {card['bandwidth_gbs']:,.0f} GB/s: {card['source']})"
        rows += [(row["kernel"], kernel_result(row), "") for row in results.get("kernels", [])]
        rows += [(row["kernel"], mnist_result(row), "") for row in results.get("mnist", [])]
        rows.append(("benchmarks", "ok" if benchmarks[0] == "0" else f"FAILED (exit {benchmarks[0]})", benchmarks[1]))
    else:
        rows.append(("benchmarks", f"FAILED (exit {benchmarks[0]}), no results: see gpu_kernels.log", benchmarks[1]))
    width = max(len(row[0]) for row in rows)
    lines = [heading, f"| {'check':<{width}} | result | seconds |", f"|{'-' * (width + 2)}|---|---|"]
    lines += [f"| {name:<{width}} | {result} | {seconds} |" for name, result, seconds in rows]
    lines.append(f"logs: {logs}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--install", nargs=2, metavar=("LABEL", "SECONDS"), required=True)
    parser.add_argument("--pytest", nargs=2, metavar=("STATUS", "SECONDS"), required=True)
    parser.add_argument("--benchmarks", nargs=2, metavar=("STATUS", "SECONDS"), required=True)
    args = parser.parse_args(argv)
    print("\n" + summary(args.logs, args.gpu, tuple(args.install), tuple(args.pytest), tuple(args.benchmarks)))


if __name__ == "__main__":
    main()
