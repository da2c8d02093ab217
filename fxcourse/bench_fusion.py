"""Time Conv+BN folding on torchvision's ResNet-18; shared by chapter 4 and `make bench-fusion`.

    python -m fxcourse.bench_fusion [--batch 8] [--size 224] [--min-run-time 2] [--threads N]
                                    [--device auto|cpu|cuda] [--plot FILE]

Four versions of the same network (random weights, eval mode) run as FX GraphModules:
  unfused        the traced network as it is
  chapter fuser  fxcourse.fusion.fuse_conv_bn
  torch fuse     torch.fx.experimental.optimization.fuse
  BN -> Identity every BatchNorm replaced by Identity: the time folding can at best reach
Each is timed with torch.utils.benchmark.Timer.blocked_autorange; medians and ratios are printed.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import logging
from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch import nn
from torch.fx.experimental.optimization import fuse

from fxcourse.fusion import fuse_conv_bn

BASELINE = "unfused"


def _import_benchmark_without_cuda_home_warning():
    """torch.utils.benchmark, imported without one irrelevant log line.

    Importing it imports torch.utils.cpp_extension, which logs "No CUDA runtime is found, using
    CUDA_HOME=..." when a CUDA toolkit is installed but no GPU is usable. That concerns compiling
    C++ extensions, never timing; only that one message of that one logger is dropped, during
    this import only.
    """
    cpp_extension_logger = logging.getLogger("torch.utils.cpp_extension")

    def drop_no_cuda_runtime(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No CUDA runtime is found")

    cpp_extension_logger.addFilter(drop_no_cuda_runtime)
    try:
        return importlib.import_module("torch.utils.benchmark")
    finally:
        cpp_extension_logger.removeFilter(drop_no_cuda_runtime)


benchmark = _import_benchmark_without_cuda_home_warning()


@dataclass
class BenchResult:
    """Median seconds per forward pass of each variant, and how they were measured."""

    device: str
    batch: int
    size: int
    num_threads: int
    medians: dict[str, float] = field(default_factory=dict)

    def ratios(self) -> dict[str, float]:
        """Time of each variant divided by the unfused time (below 1 means faster)."""
        return {name: median / self.medians[BASELINE] for name, median in self.medians.items()}


def resnet18_eval() -> nn.Module:
    """ResNet-18 with random weights (nothing downloaded) and non-trivial BN statistics."""
    from torchvision.models import resnet18

    model = resnet18(weights=None).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                # A fresh BN is the identity map (mean 0, var 1, weight 1, bias 0), which would
                # hide a wrong fold; give every BN statistics and an affine part of its own.
                for tensor, low in [
                    (module.running_mean, -0.5),
                    (module.running_var, 0.5),
                    (module.weight, 0.5),
                    (module.bias, -0.5),
                ]:
                    tensor.copy_(torch.rand(module.num_features, generator=generator) + low)
    return model


def bn_as_identity(model: nn.Module) -> nn.Module:
    """A copy of `model` with every BatchNorm replaced by nn.Identity (different outputs!)."""
    model = copy.deepcopy(model)
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, nn.modules.batchnorm._BatchNorm):
                setattr(parent, name, nn.Identity())
    return model


def build_variants(model: nn.Module) -> dict[str, fx.GraphModule]:
    """The four versions, each an FX GraphModule so that only the folding differs."""
    return {
        BASELINE: fx.symbolic_trace(copy.deepcopy(model)),
        "chapter fuser": fuse_conv_bn(model),
        "torch fuse": fuse(model),
        "BN -> Identity": fx.symbolic_trace(bn_as_identity(model)),
    }


def check_outputs_match(variants: dict[str, nn.Module], example: torch.Tensor) -> None:
    """Both fused versions compute what the unfused network computes (up to rounding)."""
    with torch.inference_mode():
        expected = variants[BASELINE](example)
        for name in ("chapter fuser", "torch fuse"):
            torch.testing.assert_close(variants[name](example), expected, rtol=1e-4, atol=1e-4)


def _infer(model: nn.Module, example: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(example)


def time_variants(
    variants: dict[str, nn.Module],
    example: torch.Tensor,
    min_run_time: float,
    num_threads: int,
    rounds: int = 3,
) -> dict[str, benchmark.Measurement]:
    """One merged blocked_autorange measurement per variant, timed with `num_threads` threads.

    The variants take turns for `rounds` rounds, so a burst of load from other processes hurts
    them all alike rather than whichever ran at the time. Timer runs with one thread unless told
    otherwise, and on a GPU it synchronizes the device before each reading of the clock.
    """
    timers = {}
    for name, model in variants.items():
        _infer(model, example)  # warm-up: first calls allocate memory and pick kernels
        timers[name] = benchmark.Timer(
            stmt="infer(model, example)",
            globals={"infer": _infer, "model": model, "example": example},
            num_threads=num_threads,
            label="ResNet-18 forward",
            sub_label=f"{example.device.type}, input {tuple(example.shape)}",
            description=name,
        )
    runs: dict[str, list[benchmark.Measurement]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            runs[name].append(timer.blocked_autorange(min_run_time=min_run_time / rounds))
    return {name: benchmark.Measurement.merge(found)[0] for name, found in runs.items()}


def run_fusion_benchmark(
    batch: int = 1,
    size: int = 64,
    min_run_time: float = 0.5,
    device: str = "cpu",
    num_threads: int | None = None,
) -> BenchResult:
    """Build the four ResNet-18 variants on `device`, check them, time them, return the medians.

    Timing uses `num_threads` threads, by default torch.get_num_threads().
    """
    num_threads = num_threads or torch.get_num_threads()
    torch.manual_seed(0)
    variants = build_variants(resnet18_eval())
    # Checked on the CPU in float32: GPU convolutions may use TF32, which rounds more coarsely.
    check_outputs_match(variants, torch.randn(1, 3, 64, 64))
    variants = {name: gm.to(device) for name, gm in variants.items()}
    example = torch.randn(batch, 3, size, size, device=device)
    measurements = time_variants(variants, example, min_run_time, num_threads)
    result = BenchResult(device, batch, size, num_threads)
    result.medians = {name: m.median for name, m in measurements.items()}
    return result


def format_result(result: BenchResult) -> str:
    """A small table: median time per forward pass, time ratio and speed-up against unfused."""
    lines = [
        f"ResNet-18, input {result.batch}x3x{result.size}x{result.size}, device {result.device}, "
        f"num_threads={result.num_threads}, medians over all timed blocks",
        f"{'variant':<16}{'median ms':>11}{'ratio':>9}{'speed-up':>10}",
    ]
    for name, ratio in result.ratios().items():
        lines.append(
            f"{name:<16}{result.medians[name] * 1e3:>11.3f}{ratio:>9.3f}{1 / ratio:>9.2f}x"
        )
    lines.append("ratio = median time / unfused median time (lower is faster)")
    return "\n".join(lines)


def plot_result(result: BenchResult, ax=None):
    """Bar chart of the medians in milliseconds; returns the matplotlib Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    names = list(result.medians)
    millis = [result.medians[name] * 1e3 for name in names]
    bars = ax.bar(names, millis, color=["#888888", "#1f77b4", "#ff7f0e", "#2ca02c"][: len(names)])
    ax.bar_label(bars, labels=[f"{r:.2f}" for r in result.ratios().values()])
    ax.margins(y=0.15)
    ax.set_ylabel("median ms per forward")
    ax.set_title(
        f"ResNet-18 {result.batch}x3x{result.size}x{result.size}, {result.device}, "
        f"num_threads={result.num_threads} (labels: ratio to unfused)",
        fontsize=9,
    )
    return ax


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
    parser.add_argument("--plot", help="also save a bar chart to this file (one per device)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for device in devices_for(args.device):
        result = run_fusion_benchmark(
            args.batch, args.size, args.min_run_time, device, args.threads
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
