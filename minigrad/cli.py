"""The ``minigrad`` command: grade exercises, (re)build exercise files, train the MNIST recipes."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def _grade(args) -> int:
    from minigrad.grading import grade
    from minigrad.grading.runner import check_limits

    try:
        check_limits(args.timeout, args.memory_mb)
        if args.file is not None and Path(args.file).is_dir():
            raise ValueError(
                f"--file {args.file}: is a folder; pass one exercise file (e.g. --file {Path(args.file) / 'NN_name.py'}) "
                f"or grade a folder of exercise files with --dir {args.file}"
            )
        results = grade(
            args.chapter, args.file, folder=args.dir, reference=args.reference,
            timeout=args.timeout, memory_mb=args.memory_mb, json_path=args.json, seed=args.seed,
        )
    except (FileNotFoundError, ValueError) as err:
        print(f"minigrad grade: {err}", file=sys.stderr)
        return 2
    failed = any(r.score < r.max_score for part in results for r in part.exercises)
    return 1 if failed and not args.exit_zero else 0


def _exercises(args) -> int:
    from minigrad.grading.carve import build

    root = Path(args.root)
    touched = build(root, check=args.check)
    if args.check:
        if touched:
            print("out of date (run `minigrad exercises build`):", *map(str, touched), sep="\n  ")
            return 1
        print("exercises/ and solutions/ are up to date")
        return 0
    print("\n".join(f"wrote {p}" for p in touched) or "exercises/ and solutions/ were already up to date")
    return 0


def _train(args) -> int:
    import minigrad.gpu  # noqa: F401  (makes "cuda" a device)
    from minigrad.data import MNISTNotFound
    from minigrad.tensor import DeviceError, device
    from minigrad.training import train_mnist

    try:
        device(args.device)
    except DeviceError as err:
        print(f"minigrad train: --device {args.device}: {err}", file=sys.stderr)
        return 2
    try:
        _, history = train_mnist(
            args.recipe, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
            data=args.data, save_path=args.save, subset=args.subset, progress=not args.no_progress,
            download=not args.no_download, device=args.device,
        )
    except MNISTNotFound as err:
        hint = f"or run `minigrad train {args.recipe} --subset` to use the small copy shipped with minigrad"
        print(f"minigrad train: {err.explain(hint, no_download='--no-download')}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:  # bad values, unwritable --save, corrupt or undownloadable data
        print(f"minigrad train: {err}", file=sys.stderr)
        return 2
    print(f"final test accuracy: {history.last.test_accuracy:.2%}")
    if args.save:
        print(f"saved model and optimizer state to {args.save}")
    return 0


_RECIPE_DEFAULT = "; leave the option out to use the recipe's value"


def _at_least(low: int, hint: str = ""):
    """An argparse type: a whole number >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}{hint}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}{hint}")
        return value

    return parse


def _positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1e-3, got {text!r}{_RECIPE_DEFAULT}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (e.g. 1e-3), got {text}{_RECIPE_DEFAULT}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minigrad", description="minigrad course tools")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade your exercise file(s)")
    g.add_argument("chapter", help="chapter number (01, 02, ...), an exercise id (6.2: grades the file that holds it) or 'all'")
    g.add_argument("--file", help="the file to grade (default: exercises/NN_*.py from the current folder up)")
    g.add_argument("--dir", help="a folder holding NN_*.py exercise files (for 'all')")
    g.add_argument("--reference", action="store_true", help="grade the library's own reference code")
    g.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json to PATH")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per exercise (default 60)")
    g.add_argument("--memory-mb", type=int, default=2048, help="memory limit per exercise in MB (default 2048, at least 512)")
    g.add_argument("--seed", type=int, help="replay the random inputs of a run (a failing check prints its seed)")
    g.add_argument("--exit-zero", action="store_true", help="exit with status 0 even when a check fails (default: 1)")
    g.set_defaults(run=_grade)

    e = sub.add_parser("exercises", help="generate exercises/ and solutions/ from the library")
    e.add_argument("action", choices=["build"])
    e.add_argument("--check", action="store_true", help="only compare; exit 1 if the files are out of date")
    e.add_argument("--root", default=".", help="folder that holds exercises/ and solutions/ (default: .)")
    e.set_defaults(run=_exercises)

    t = sub.add_parser("train", help="train an MNIST recipe and report its test accuracy")
    t.add_argument("recipe", choices=["mnist-mlp", "mnist-cnn"])
    t.add_argument("--epochs", type=_at_least(1, _RECIPE_DEFAULT), help="default: the recipe's (5 for the MLP, 3 for the CNN)")
    t.add_argument("--batch-size", type=_at_least(1, _RECIPE_DEFAULT), help="default: the recipe's (128 for the MLP, 64 for the CNN)")
    t.add_argument("--lr", type=_positive_float, help="peak learning rate of Adam (cosine-annealed to 0); default: the recipe's")
    t.add_argument("--seed", type=_at_least(0), default=0)
    t.add_argument("--data", help="folder with the MNIST files (default: $MINIGRAD_DATA or the user cache)")
    t.add_argument("--subset", action="store_true", help="use the small MNIST subset shipped with minigrad")
    t.add_argument("--no-download", action="store_true", help="never download; fail if the files are not on disk")
    t.add_argument("--save", metavar="PATH", help="save model + optimizer state to PATH (.npz, no pickle)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--device", default="cpu", help="where to train: cpu (default) or cuda (needs CuPy and an NVIDIA GPU)")
    t.set_defaults(run=_train)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
