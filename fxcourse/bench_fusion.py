"""Time Conv+BN folding on torchvision's ResNet-18; shared by chapter 4 and `make bench-fusion`.

    python -m fxcourse.bench_fusion [--batch 8] [--size 224] [--min-run-time 2] [--threads N]
                                    [--rounds 15] [--clock wall|thread] [--device auto|cpu|cuda]
                                    [--plot FILE]

Four versions of the same network (random weights, eval mode) run as FX GraphModules:
  unfused        the traced network as it is
  chapter fuser  fxcourse.fusion.fuse_conv_bn
  torch fuse     torch.fx.experimental.optimization.fuse
  BN erased      every BatchNorm node erased by a graph pass: what the network costs without
                 BatchNorm, making the same module calls as a folded network (the floor)
Each round times every variant once with torch.utils.benchmark.Timer.blocked_autorange, one
after the other. The report gives each variant's median and interquartile range (IQR) over the
rounds, its time ratio to the unfused network round by round, and the conclusions the numbers
support: a difference counts as measurable only when one variant wins so many of the rounds that
equally fast variants would rarely do so (a sign test). The last conclusion, how much of
BatchNorm's cost the chapter's fold recovers, is computed from those same numbers.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from fxcourse import charts
from fxcourse.bench_models import (  # noqa: F401 (bn_erased: chapter 4 prints its source)
    BASELINE,
    FLOOR,
    bn_erased,
    build_variants,
    check_outputs_match,
    resnet18_eval,
)
from fxcourse.graphs import alt_text
from fxcourse.messages import _
from fxcourse.timing import (
    Comparison,
    benchmark,
    compare,
    padded,
    quartiles,
    thread_cpu_clock,
    time_in_rounds,
)

ROUNDS = 15
# "wall": torch.utils.benchmark's own clock (it synchronizes a GPU first). "thread": CPU time of
# the timing thread, which leaves out the moments the operating system gives the core to other
# programs; it covers the whole forward pass only on a CPU with one thread.
CLOCKS = ("wall", "thread")


def clock_name(clock: str) -> str:
    """The clock as a table or a chart names it (CLOCKS holds the option's values)."""
    return _("thread CPU clock") if clock == "thread" else _("wall clock")


@dataclass
class BenchResult:
    """Seconds per forward pass of each variant, one time per round, and how they were taken."""

    device: str
    batch: int
    size: int
    num_threads: int
    clock: str = "wall"
    round_times: dict[str, list[float]] = field(default_factory=dict)

    @property
    def input_shape(self) -> str:
        return f"{self.batch}x3x{self.size}x{self.size}"

    def quartiles(self, name: str) -> tuple[float, float, float]:
        return quartiles(self.round_times[name])

    def compare(self, name: str, other: str = BASELINE) -> Comparison:
        """`name` against `other`, both called as the learner's language calls them."""
        compared = compare(self.round_times, name, other)
        return replace(compared, name=shown(name), other=shown(other))

    def bn_share(self) -> str:
        """What fraction of the unfused forward time BatchNorm takes, as a sentence."""
        floor = self.compare(FLOOR)
        q1, _median, q3 = quartiles(floor.per_round)
        text = _(
            "BatchNorm's share of the unfused ResNet-18 forward time here: {share:.1%} "
            "(middle half of the rounds {low:.1%} to {high:.1%})"
        ).format(share=1 - floor.ratio, low=1 - q3, high=1 - q1)
        return text if floor.measurable else text + _(", not measurable in this run")


def shown(variant: str) -> str:
    """A variant's name in the learner's language (the English names stay the results' keys)."""
    names = {
        BASELINE: _("unfused"),
        "chapter fuser": _("chapter fuser"),
        "torch fuse": _("torch fuse"),
        FLOOR: _("BN erased"),
    }
    return names.get(variant, variant)


def _infer(model: nn.Module, example: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(example)


def time_variants(
    variants: dict[str, nn.Module],
    example: torch.Tensor,
    min_run_time: float,
    num_threads: int,
    rounds: int = ROUNDS,
    clock: str = "wall",
) -> dict[str, list[benchmark.Measurement]]:
    """Per variant, one blocked_autorange measurement per round (see time_in_rounds).

    Timer runs the statement with one thread unless given `num_threads`; on a GPU its wall clock
    synchronizes the device before each reading.
    """
    clock_option = {"timer": thread_cpu_clock} if clock == "thread" else {}
    timers = {
        name: benchmark.Timer(
            stmt="infer(model, example)",
            globals={"infer": _infer, "model": model, "example": example},
            num_threads=num_threads,
            label="ResNet-18 forward",
            sub_label=f"{example.device.type}, input {tuple(example.shape)}",
            description=name,
            **clock_option,
        )
        for name, model in variants.items()
    }
    return time_in_rounds(timers, rounds, min_run_time)


def run_fusion_benchmark(
    batch: int = 1,
    size: int = 64,
    min_run_time: float = 0.5,
    device: str = "cpu",
    num_threads: int | None = None,
    rounds: int = ROUNDS,
    model: nn.Module | None = None,
    clock: str = "wall",
) -> BenchResult:
    """Build the four ResNet-18 variants on `device`, check them, time them, return the times.

    `model` is the eval-mode network to start from (default: `resnet18_eval()`); `min_run_time`
    is the timing budget per variant, spread over the rounds. Timing uses `num_threads`
    threads, by default torch.get_num_threads(); `clock` is one of CLOCKS.
    """
    num_threads = num_threads or torch.get_num_threads()
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    if clock == "thread" and (device != "cpu" or num_threads != 1):
        raise ValueError(
            "the thread clock sees a whole forward pass only on the CPU with one thread; "
            f"got device={device!r}, num_threads={num_threads}: use clock='wall'"
        )
    torch.manual_seed(0)
    variants = build_variants(model if model is not None else resnet18_eval())
    # Checked on the CPU in float32: GPU convolutions may use TF32, which rounds more coarsely.
    check_outputs_match(variants, torch.randn(1, 3, 64, 64))
    variants = {name: gm.to(device) for name, gm in variants.items()}
    example = torch.randn(batch, 3, size, size, device=device)
    measurements = time_variants(variants, example, min_run_time, num_threads, rounds, clock)
    result = BenchResult(device, batch, size, num_threads, clock)
    result.round_times = {name: [m.median for m in ms] for name, ms in measurements.items()}
    return result


def format_result(result: BenchResult, detailed: bool = True) -> str:
    """A table (median and IQR per variant, ratios to unfused) and the conclusions it supports;
    with `detailed=False` only BatchNorm's share and the verdict, without each comparison."""
    rounds = len(result.round_times[BASELINE])
    lines = [
        _(
            "ResNet-18, input {shape}, device {device}, num_threads={threads}, {clock}, "
            "{rounds} rounds"
        ).format(
            shape=result.input_shape,
            device=result.device,
            threads=result.num_threads,
            clock=clock_name(result.clock),
            rounds=rounds,
        ),
        padded(_("variant"), 16)
        + padded(_("median ms"), 10, right=True)
        + padded(_("IQR ms"), 12, right=True)  # room for a translated header
        + "   "
        + _("time / unfused time: median (IQR)"),
    ]
    for name in result.round_times:
        q1, median, q3 = result.quartiles(name)
        ratio_q1, ratio, ratio_q3 = quartiles(result.compare(name).per_round)
        lines.append(
            f"{padded(shown(name), 16)}{median * 1e3:>10.3f}{(q3 - q1) * 1e3:>12.3f}   "
            + _("{ratio:.3f} ({low:.3f} to {high:.3f})").format(
                ratio=ratio, low=ratio_q1, high=ratio_q3
            )
        )
    lines.append(
        _("medians and interquartile ranges over the rounds; below 1 is faster than unfused")
    )
    lines.append("")
    lines += conclusions(result) if detailed else [result.bn_share(), fold_verdict(result)]
    return "\n".join(lines)


def conclusions(result: BenchResult) -> list[str]:
    """BatchNorm's share of the time, then what each comparison of interest supports."""
    pairs = [
        ("chapter fuser", BASELINE),
        ("torch fuse", BASELINE),
        ("chapter fuser", "torch fuse"),
        ("chapter fuser", FLOOR),
    ]
    comparisons = [result.compare(a, b).describe() for a, b in pairs]
    return [result.bn_share(), *comparisons, fold_verdict(result)]


def fold_verdict(result: BenchResult, fuser: str = "chapter fuser") -> str:
    """How much of BatchNorm's cost the fold recovers, decided by the sign tests above."""
    floor, fused = result.compare(FLOOR), result.compare(fuser)
    against_floor = result.compare(fuser, FLOOR)
    share = _("BatchNorm's {share:.1%}").format(share=1 - floor.ratio)
    fuser = shown(fuser)
    if not (floor.measurable and floor.ratio < 1):
        return _(
            "Verdict: erasing BatchNorm saves no measurable time in this run, so no saving from "
            "folding can be shown here (the {fuser} is at {ratio:.3f} of unfused)."
        ).format(fuser=fuser, ratio=fused.ratio)
    if against_floor.measurable and against_floor.ratio < 1:
        return _(
            "Verdict: the {fuser} reached the floor and ran {gap:.1%} faster still: folding "
            "recovers all of {share}. The floor does nearly the same work without BatchNorm, so "
            "a gap this small comes from something else (memory layout, caches, load)."
        ).format(fuser=fuser, gap=1 - against_floor.ratio, share=share)
    saves = fused.measurable and fused.ratio < 1
    if not saves and not against_floor.measurable:
        return _(
            "Verdict: the {fuser} cannot be told apart from unfused nor from the floor: this run "
            "cannot say how much of {share} it recovers."
        ).format(fuser=fuser, share=share)
    if not saves:
        return _(
            "Verdict: {share} could be saved, but the {fuser} saves nothing measurable."
        ).format(fuser=fuser, share=share)
    if not against_floor.measurable:
        return _(
            "Verdict: the {fuser} cannot be told apart from the floor: folding recovers all of "
            "{share} that this run can resolve."
        ).format(fuser=fuser, share=share)
    recovered = (1 - fused.ratio) / (1 - floor.ratio)
    return _(
        "Verdict: the {fuser} is measurably slower than the floor; it recovers about "
        "{recovered:.0%} of {share} (medians of the round ratios)."
    ).format(fuser=fuser, recovered=recovered, share=share)


def plot_result(result: BenchResult, ax=None):
    """Each variant's time relative to unfused, round by round: one dot per round, a bar from
    the 25th to the 75th percentile and a tick at the median; returns the matplotlib Axes. In a
    notebook a chart of its own is shown with a text alternative that says what it plots."""
    import matplotlib.pyplot as plt

    own_figure = ax is None
    if own_figure:
        charts.lettering()
        _figure, ax = plt.subplots(figsize=(6, 2.8))
    names = [name for name in result.round_times if name != BASELINE]
    for row, name in enumerate(names):
        ratios = result.compare(name).per_round
        q1, median, q3 = quartiles(ratios)
        ax.plot(ratios, [row] * len(ratios), "o", color="#9ca3af", markersize=4, alpha=0.7)
        ax.plot([q1, q3], [row, row], color="#1f77b4", linewidth=5, solid_capstyle="butt")
        ax.plot([median], [row], "|", color="black", markersize=16, markeredgewidth=2)
    ax.axvline(1.0, color="#6b7280", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(names)), [shown(name) for name in names])
    ax.invert_yaxis()
    ax.set_xlabel(_("time / unfused time in the same round (left of 1 is faster)"))
    run = _("ResNet-18 {shape}, {device}, num_threads={threads}, {clock}").format(
        shape=result.input_shape,
        device=result.device,
        threads=result.num_threads,
        clock=clock_name(result.clock),
    )
    legend = _("dots are rounds, bars the middle half, ticks the median")
    ax.set_title(f"{run}\n{legend}", fontsize=8)
    if own_figure:
        ax.figure.tight_layout()  # room for the variants' names and the axis label
        charts.shown(ax.figure, ratios_alt(result, names))
    return ax


def ratios_alt(result: BenchResult, names: list[str]) -> str:
    """What plot_result plots, for a screen reader: each variant's median ratio and middle half."""
    rows = []
    for name in names:
        q1, median, q3 = quartiles(result.compare(name).per_round)
        rows.append(
            _("{name}: median {median:.2f}, middle half {low:.2f} to {high:.2f}").format(
                name=shown(name), median=median, low=q1, high=q3
            )
        )
    title = _(
        "Chart of each variant's time relative to {baseline} in the same round, over {rounds} "
        "rounds (below 1 is faster)"
    ).format(baseline=shown(BASELINE), rounds=len(result.round_times[BASELINE]))
    return alt_text(title, rows)


def devices_for(choice: str) -> list[str]:
    if choice == "auto":
        return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    if choice == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda was asked for, but CUDA is not available here")
    return [choice]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8, help="images per forward pass")
    parser.add_argument("--size", type=int, default=224, help="image height and width")
    parser.add_argument(
        "--min-run-time", type=float, default=2.0, help="seconds of timing per variant"
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="auto: CPU, and CUDA too when it is available",
    )
    parser.add_argument(
        "--threads", type=int, help="threads to time with (default: torch.get_num_threads())"
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="rounds in which the variants take turns"
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="wall: elapsed time; thread: CPU time of the timing thread (CPU, --threads 1 only)",
    )
    parser.add_argument("--plot", help="also save a chart to this file (one per device)")
    args = parser.parse_args(argv)
    if args.clock == "thread" and (args.threads != 1 or args.device != "cpu"):
        parser.error("--clock thread sees a whole forward pass only with --device cpu --threads 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for device in devices_for(args.device):
        result = run_fusion_benchmark(
            args.batch,
            args.size,
            args.min_run_time,
            device,
            args.threads,
            args.rounds,
            clock=args.clock,
        )
        print(format_result(result), end="\n\n")
        if args.plot:
            _save_plot(result, args.plot)


def _save_plot(result: BenchResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_result(result)
    stem, dot, suffix = path.rpartition(".")
    target = f"{stem}-{result.device}.{suffix}" if dot else f"{path}-{result.device}"
    ax.figure.savefig(target, bbox_inches="tight")
    print(f"saved {target}")


if __name__ == "__main__":
    main()
