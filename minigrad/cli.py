"""The ``minigrad`` command: grade exercises, (re)build exercise files, train the MNIST recipes, size their memory."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def _grade(args) -> int:
    from minigrad.grading import grade
    from minigrad.grading.runner import check_limits

    if args.csv is not None or args.chapters is not None or args.jobs is not None:
        return _gradebook(args)
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


def _gradebook(args) -> int:
    from minigrad.grading import gradebook

    def fail(message: str) -> int:
        print(f"minigrad grade: {message}", file=sys.stderr)
        return 2

    if args.csv is None:
        return fail("--chapters and --jobs are for a class's gradebook: add --csv PATH (and --dir with the submissions)")
    if args.dir is None:
        return fail(f"--csv {args.csv}: name the folder of submissions with --dir; it should hold {gradebook.LAYOUT_HELP}")
    if args.file is not None or args.reference or args.json is not None:
        return fail("--csv grades a folder of students (--dir); it does not combine with --file, --reference or --json")
    if args.chapter != "all" and args.chapters is not None:
        return fail(f"grade {args.chapter} --chapters ...: name the chapters once (`grade all --chapters ...`)")
    numbers = args.chapters if args.chapters is not None else (None if args.chapter == "all" else [args.chapter])
    csv_path, folder = Path(args.csv).resolve(), Path(args.dir).resolve()
    if folder in csv_path.parents:
        return fail(f"--csv {args.csv}: is inside the submissions folder {args.dir}; write it elsewhere")
    if csv_path.is_dir():
        return fail(f"--csv {args.csv}: is a folder; name the file, e.g. --csv {Path(args.csv) / 'gradebook.csv'}")

    def done(grades) -> None:
        total = sum(grades.scores.values())
        print(f"  {grades.student}: {total:g} points ({grades.seconds:.1f} s)", file=sys.stderr, flush=True)

    try:
        book = gradebook.grade_all(folder, numbers, jobs=args.jobs, timeout=args.timeout, memory_mb=args.memory_mb,
                                   seed=args.seed, progress=done)
        gradebook.write_csv(book, csv_path)
    except (FileNotFoundError, ValueError) as err:
        return fail(str(err))
    except OSError as err:
        return fail(f"--csv {args.csv}: cannot write it: {err}")
    print(gradebook.summary(book), end="")
    print(f"wrote {args.csv}")
    return 0


def _exercises_build(args) -> int:
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


def _exercises_init(args) -> int:
    from minigrad.grading import workspace

    root = Path(args.folder).expanduser().resolve() if args.folder else workspace.locate()
    try:
        report = workspace.sync(root)
    except OSError as err:
        print(f"minigrad exercises init: cannot write the workspace {root}: {err}", file=sys.stderr)
        return 2
    print("\n".join(report.lines() or [f"your workspace {root} is up to date"]))
    print(f"your answers go in {root / 'exercises'}; grade them with `minigrad grade NN`")
    if root != workspace.locate():
        print(f"(work inside {root}, or set {workspace.ENVIRONMENT_VARIABLE}={root}, for `minigrad grade` to find it)")
    return 0


def _exercises_reset(args) -> int:
    from minigrad.grading import workspace

    try:
        result = workspace.reset(args.which)
    except (ValueError, OSError) as err:
        print(f"minigrad exercises reset: {err}", file=sys.stderr)
        return 2
    if result.backup is None:
        print(f"{result.path} already holds the stub")
        return 0
    what = ", ".join(result.functions)
    print(f"put {what} of {result.path} back to the stub; your previous file is kept as {result.backup}")
    if result.also_reset:
        print(f"(that also resets exercise {', '.join(result.also_reset)}, which shares the same function)")
    return 0


def _exercises_where(args) -> int:
    from minigrad.grading import workspace

    root = workspace.locate()
    print(root)
    if not (root / workspace.MARKER).is_file():
        print("(not made yet: `minigrad exercises init` or `minigrad lab` makes it)", file=sys.stderr)
    return 0


def _lab(args) -> int:
    from minigrad.course.lab import main as lab

    return lab(args.lab_arguments)


def _doctor(args) -> int:
    from minigrad.course.doctor import main as doctor

    return doctor(as_json=args.json)


CAPSTONE_OPTIONS = ("gpu_budget", "amp", "checkpoint", "accumulate", "resume", "save_every")


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
    if any(getattr(args, name) is not None for name in CAPSTONE_OPTIONS):
        return _train_run(args)
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


def _train_run(args) -> int:
    """``minigrad train`` with the capstone's options: a TrainingRun (simulated card, amp, checkpointing, resume)."""
    from minigrad.capstone import TrainConfig
    from minigrad.capstone.recipe_run import summary, train_recipe
    from minigrad.data import MNISTNotFound
    from minigrad.memory import OutOfMemoryError
    from minigrad.training import RECIPES

    batch_size = args.batch_size or RECIPES[args.recipe].batch_size
    try:
        config = TrainConfig(batch_size=batch_size, amp=args.amp, checkpoint=args.checkpoint,
                             accumulate=args.accumulate or 1, card=args.gpu_budget)
    except ValueError as err:  # the combinations are checked by _check_train_options; this is a backstop
        print(f"minigrad train: {err}", file=sys.stderr)
        return 2
    try:
        run, seconds = train_recipe(args.recipe, config, epochs=args.epochs, lr=args.lr, seed=args.seed,
                                    data=args.data, subset=args.subset, download=not args.no_download,
                                    device=args.device, resume=args.resume, save_path=args.save,
                                    save_every=args.save_every, progress=not args.no_progress)
    except MNISTNotFound as err:
        hint = f"or run `minigrad train {args.recipe} --subset` to use the small copy shipped with minigrad"
        print(f"minigrad train: {err.explain(hint, no_download='--no-download')}", file=sys.stderr)
        return 2
    except OutOfMemoryError as err:
        print(f"minigrad train: the step does not fit the {config.card}:\n{err}", file=sys.stderr)
        print("try --checkpoint auto, --amp float16 or a larger --accumulate", file=sys.stderr)
        return 1
    except (ValueError, OSError) as err:
        print(f"minigrad train: {err}", file=sys.stderr)
        return 2
    print(summary(run, seconds, args.save))
    return 0


def _checkpoint_mode(text: str):
    if text in ("auto", "budget"):
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r}: use auto (plan for the --gpu-budget card), budget (evict and "
                                     f"recompute under it) or a number of segments >= 1")


def _check_train_options(t, args) -> None:
    """Combinations argparse cannot refuse by itself, refused with its usage and a fix."""
    if args.checkpoint in ("auto", "budget") and args.gpu_budget is None:
        t.error(f"--checkpoint {args.checkpoint} plans against a card's memory: add --gpu-budget PROFILE "
                "(e.g. --gpu-budget gtx1050), or give a number of segments")
    if args.save_every is not None and args.save is None:
        t.error("--save-every N saves the run to the --save path: add --save PATH")
    if args.resume is not None and not Path(args.resume).is_file():
        t.error(f"--resume {args.resume}: no such file (a run saved with --save / --save-every)")
    if args.accumulate is not None:
        from minigrad.training import RECIPES

        batch = args.batch_size or RECIPES[args.recipe].batch_size
        if batch % args.accumulate:
            divisors = [k for k in range(1, min(batch, 64) + 1) if batch % k == 0]
            t.error(f"--accumulate {args.accumulate} must divide the batch of {batch}"
                    f"{'' if args.batch_size else ' (the recipe' + chr(39) + 's; set it with --batch-size)'} into "
                    f"equal micro-batches; try --accumulate in {divisors}")
    if args.gpu_budget is not None and args.device != "cpu":
        t.error(f"--gpu-budget simulates a card's memory on the CPU; it does not combine with --device {args.device}")


# The names the memory subcommand accepts, kept here so that building the parser imports no stage
# (tests/test_cli_memory.py checks them against the recipes, minigrad.memory's optimizers and the float dtypes).
MEMORY_MODELS = ("mnist-mlp", "mnist-cnn")
MEMORY_OPTIMIZERS = ("adam", "sgd", "sgd-momentum", "adamw", "rmsprop")
MEMORY_DTYPES = ("float32", "float16", "bfloat16", "float64")
MEMORY_EXIT_CODES = """exit status of `minigrad memory estimate`: 0 the step fits the --gpu card (or no --gpu was
given), 1 it does not fit, 2 bad arguments"""


def _memory_devices(args) -> int:
    from minigrad.memory.profiles import profiles_table

    print(profiles_table())
    return 0


def _memory_estimate(args) -> int:
    from dataclasses import replace

    from minigrad.memory.estimate import estimate
    from minigrad.memory.profiles import PROFILES
    from minigrad.training.recipes import RECIPES

    model = RECIPES[args.model].build()
    result = estimate(model, (1, 28, 28), args.batch, optimizer=args.optimizer, dtype=args.dtype,
                      accumulation_steps=args.accumulation)
    print(replace(result, model_name=args.model))
    if args.accumulation > 1:
        print(f"  effective batch: {args.batch} x {args.accumulation} = {args.batch * args.accumulation}")
    print()
    if args.gpu is None:
        for profile in PROFILES.values():
            print(result.fit_report(profile))
        return 0
    print(result.fit_report(args.gpu))
    if result.fits(args.gpu):
        return 0
    print(_memory_fix(model, args))
    return 1


def _memory_fix(model, args) -> str:
    """What to change so that the step fits ``args.gpu``: accumulation at the same effective batch."""
    from minigrad.memory.accumulation import accumulation_estimates, fewest_steps_for
    from minigrad.memory.estimate import format_bytes

    effective = args.batch * args.accumulation
    estimates = accumulation_estimates(model, (1, 28, 28), optimizer=args.optimizer, dtype=args.dtype)
    best = fewest_steps_for(estimates, effective, args.gpu)
    if best is None:
        smaller = " or --dtype float16" if args.dtype in ("float32", "float64") else ""
        return ("does not fit even in micro-batches of one example: choose a card with more memory "
                f"(`minigrad memory devices`){smaller}")
    return (f"does not fit: keep the effective batch {effective} with gradient accumulation, "
            f"--batch {best.micro_batch} --accumulation {best.steps} (peak allocated {format_bytes(best.peak)}, "
            f"reserved {format_bytes(best.reserved)}), or use a smaller batch")


def _choice(kind: str, names):
    """An argparse type: one of ``names``; the error lists them all."""
    names = list(names)

    def parse(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"unknown {kind} {text!r}; choose one of {', '.join(names)}")
        return text

    return parse


def _gpu(text: str):
    from minigrad.memory.profiles import get_profile

    try:
        return get_profile(text)
    except ValueError as err:
        known = str(err).removeprefix("get_profile: ").split(" (or build")[0]
        raise argparse.ArgumentTypeError(f"{known} (`minigrad memory devices` lists them)") from None


def _add_memory_parser(sub) -> None:
    m = sub.add_parser("memory", help="GPU profiles and the memory of a training step",
                       description="Simulated consumer GPUs and the memory a training step needs on them.")
    actions = m.add_subparsers(dest="action", required=True)
    d = actions.add_parser("devices", help="the table of GPU profiles (memory, bandwidth, throughput, CUDA context)")
    d.set_defaults(run=_memory_devices)
    e = actions.add_parser(
        "estimate", help="memory of one training step of a recipe, and whether it fits a GPU",
        description="The memory of one training step (parameters, gradients, optimizer state, inputs, "
                    "activations, peak), measured at three small batches and extrapolated exactly; whether it "
                    "fits a GPU is answered in reserved bytes, the step's allocations replayed through the "
                    "card's caching allocator as the simulated card decides (the allocated peak beside it).",
        epilog=MEMORY_EXIT_CODES)
    e.add_argument("model", type=_choice("model", MEMORY_MODELS), metavar="MODEL",
                   help=f"one of {', '.join(MEMORY_MODELS)}")
    e.add_argument("--batch", type=_at_least(1), required=True,
                   help="batch size (of each micro-batch with --accumulation)")
    e.add_argument("--gpu", type=_gpu, help="a profile from `minigrad memory devices` (default: report every profile)")
    e.add_argument("--dtype", type=_choice("dtype", MEMORY_DTYPES), default="float32",
                   help=f"one of {', '.join(MEMORY_DTYPES)} (default float32)")
    e.add_argument("--optimizer", type=_choice("optimizer", MEMORY_OPTIMIZERS), default="adam",
                   help=f"one of {', '.join(MEMORY_OPTIMIZERS)} (default adam)")
    e.add_argument("--accumulation", type=_at_least(1), default=1, metavar="N",
                   help="micro-batches of --batch per optimizer step (gradient accumulation; default 1)")
    e.set_defaults(run=_memory_estimate)


_RECIPE_DEFAULT = "; leave the option out to use the recipe's value"


def _at_least(low: int, hint: str = ""):
    """An argparse type: a whole number >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            digits = " (write it in digits, e.g. 100000)" if any(c in text for c in "eE.") else ""
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}{digits}{hint}") from None
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
    g.add_argument("--file", help="the file to grade (default: your workspace's copy, see `minigrad exercises where`)")
    g.add_argument("--dir", help="a folder holding NN_*.py exercise files (for 'all')")
    g.add_argument("--reference", action="store_true", help="grade the library's own reference code")
    g.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json to PATH")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per exercise (default 60)")
    g.add_argument("--memory-mb", type=int, default=2048, help="memory limit per exercise in MB (default 2048, at least 512)")
    g.add_argument("--seed", type=int, help="replay the random inputs of a run (a failing check prints its seed)")
    g.add_argument("--exit-zero", action="store_true", help="exit with status 0 even when a check fails (default: 1)")
    g.add_argument("--csv", metavar="PATH",
                   help="a class's gradebook: grade every student in --dir and write PATH, a row per student "
                        "(exercise points, chapter totals, total, notes); --dir holds a folder per student with "
                        "files named like exercises/NN_*.py (alice/05_linear.py), or files named "
                        "<student>__NN_name.py (alice__05_linear.py)")
    g.add_argument("--chapters", nargs="+", metavar="NN",
                   help="with --csv: the chapters to grade (default: every chapter some student handed a file in for)")
    g.add_argument("--jobs", type=_at_least(1), metavar="N",
                   help="with --csv: students graded at once (default: the number of CPUs)")
    g.set_defaults(run=_grade)

    e = sub.add_parser("exercises", help="your workspace's exercise files: make, reset, locate; or rebuild the pristine stubs")
    ex = e.add_subparsers(dest="action", required=True)
    init = ex.add_parser("init", help="make (or refresh) your workspace: your copies of the exercises (and chapters)")
    init.add_argument("folder", nargs="?", help="where (default: `minigrad exercises where`)")
    init.set_defaults(run=_exercises_init)
    reset = ex.add_parser("reset", help="put one exercise (4.2) or one file (04_backward.py) back to its stub")
    reset.add_argument("which", help="an exercise id such as 4.2, or an exercise file name")
    reset.set_defaults(run=_exercises_reset)
    where = ex.add_parser("where", help="print the folder of your workspace")
    where.set_defaults(run=_exercises_where)
    b = ex.add_parser("build", help="regenerate exercises/ and solutions/ of the course from the library (maintainers)")
    b.add_argument("--check", action="store_true", help="only compare; exit 1 if the files are out of date")
    b.add_argument("--root", default=".", help="folder that holds exercises/ and solutions/ (default: .)")
    b.set_defaults(run=_exercises_build)

    lab = sub.add_parser("lab", help="open the course in JupyterLab, on your workspace (extra arguments go to JupyterLab)")
    lab.set_defaults(run=_lab)

    d = sub.add_parser("doctor", help="check this machine for the course: what is there, what is missing, the fix for each")
    d.add_argument("--json", action="store_true", help="print the report as one JSON object")
    d.set_defaults(run=_doctor)

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
    c = t.add_argument_group("training under a budget (chapter 11)")
    c.add_argument("--gpu-budget", metavar="PROFILE", type=lambda text: _gpu(text).short_name,
                   help="run every step on a simulated card (`minigrad memory devices` lists them, e.g. gtx1050)")
    c.add_argument("--amp", choices=["float16", "bfloat16"], help="mixed precision (float16 scales the loss)")
    c.add_argument("--checkpoint", type=_checkpoint_mode, metavar="auto|N|budget",
                   help="activation checkpointing: planned for the card, N equal segments, or the budget mode")
    c.add_argument("--accumulate", type=_at_least(1), metavar="K",
                   help="split each batch into K micro-batches (same update, less memory); K must divide the batch")
    c.add_argument("--resume", metavar="PATH", help="continue a run saved with --save (bitwise as if never stopped)")
    c.add_argument("--save-every", type=_at_least(1), metavar="N", help="save the run to the --save path every N steps")
    t.set_defaults(run=_train, validate=lambda args: _check_train_options(t, args))

    _add_memory_parser(sub)
    return p


def _numbers_kept(argv: list[str]) -> list[str]:
    """``--opt -1e-3`` as ``--opt=-1e-3``: argparse takes a negative number in exponent form for an option.

    Then the option's own check refuses the value with its message, instead of
    argparse's "expected one argument".
    """
    out = []
    for i, token in enumerate(argv):
        previous = argv[i - 1] if i else ""
        if token.startswith("-") and previous.startswith("--") and "=" not in previous and out and out[-1] == previous:
            try:
                float(token)
            except ValueError:
                pass
            else:
                out[-1] = f"{previous}={token}"
                continue
        out.append(token)
    return out


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args, unknown = command.parse_known_args(_numbers_kept(sys.argv[1:] if argv is None else list(argv)))
    if args.command == "lab":
        args.lab_arguments = unknown  # JupyterLab's own options, passed on
    elif unknown:
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "validate", None) is not None:  # combinations of options, refused with the parser's usage
        args.validate(args)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
