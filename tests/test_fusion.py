"""The Conv+BN folding pass of chapter 4 (fxcourse.fusion) and its benchmark command line."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.fx as fx
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from fxcourse.bench_fusion import (
    FLOOR,
    BenchResult,
    bn_erased,
    fold_verdict,
    format_result,
    plot_result,
    run_fusion_benchmark,
)
from fxcourse.fusion import find_candidates, fold_conv_bn, fuse_conv_bn

ROOT = Path(__file__).resolve().parents[1]


def randomize_bn(model: nn.Module) -> nn.Module:
    """Give every BN non-trivial statistics and affine parameters (a fresh BN is the identity)."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                n = module.num_features
                module.running_mean.copy_(torch.randn(n))
                module.running_var.copy_(torch.rand(n) + 0.5)
                if module.affine:
                    module.weight.copy_(torch.rand(n) + 0.5)
                    module.bias.copy_(torch.randn(n))
    return model


def bn_targets(gm: fx.GraphModule) -> list[str]:
    return [
        name for name, m in gm.named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
    ]


class ConvBN(nn.Module):
    def __init__(self, conv: nn.Conv2d):
        super().__init__()
        self.conv = conv
        self.bn = nn.BatchNorm2d(conv.out_channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


CONV_CASES = {
    "groups": dict(in_channels=4, out_channels=8, kernel_size=3, padding=1, groups=2),
    "depthwise": dict(in_channels=6, out_channels=6, kernel_size=3, padding=1, groups=6),
    "dilation": dict(in_channels=3, out_channels=5, kernel_size=3, padding=2, dilation=2),
    "no_bias": dict(in_channels=3, out_channels=5, kernel_size=3, bias=False),
    "stride": dict(in_channels=3, out_channels=5, kernel_size=3, stride=2, padding=1),
    "reflect": dict(
        in_channels=3, out_channels=4, kernel_size=3, padding=2, padding_mode="reflect"
    ),
    "circular": dict(
        in_channels=4, out_channels=4, kernel_size=3, padding=1, padding_mode="circular"
    ),
    "everything": dict(
        in_channels=4,
        out_channels=6,
        kernel_size=3,
        padding=2,
        dilation=2,
        groups=2,
        bias=False,
        padding_mode="reflect",
    ),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_fused_matches_unfused(case, dtype):
    torch.manual_seed(0)
    model = randomize_bn(ConvBN(nn.Conv2d(**CONV_CASES[case]))).to(dtype).eval()
    x = torch.randn(2, model.conv.in_channels, 9, 9, dtype=dtype)
    fused = fuse_conv_bn(model)
    assert bn_targets(fused) == []
    assert fused.conv.weight.dtype == dtype and fused.conv.bias.dtype == dtype
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))


@pytest.mark.parametrize("case", CONV_CASES)
def test_fold_conv_bn_matches_torch(case):
    torch.manual_seed(1)
    model = randomize_bn(ConvBN(nn.Conv2d(**CONV_CASES[case]))).eval()
    ours, theirs = fold_conv_bn(model.conv, model.bn), fuse_conv_bn_eval(model.conv, model.bn)
    torch.testing.assert_close(ours.weight, theirs.weight)
    torch.testing.assert_close(ours.bias, theirs.bias)
    for attribute in ("stride", "padding", "dilation", "groups", "padding_mode"):
        assert getattr(ours, attribute) == getattr(model.conv, attribute)


def test_fold_leaves_the_original_modules_alone():
    model = randomize_bn(ConvBN(nn.Conv2d(3, 4, 3, bias=False))).eval()
    weight = model.conv.weight.clone()
    fuse_conv_bn(model)
    assert model.conv.bias is None
    assert torch.equal(model.conv.weight, weight)
    assert isinstance(model.bn, nn.BatchNorm2d)


def test_result_shares_no_parameters_with_the_model():
    model = nn.Sequential(randomize_bn(ConvBN(nn.Conv2d(3, 4, 3))), nn.Flatten(), nn.LazyLinear(2))
    model(torch.randn(1, 3, 5, 5))  # materializes the lazy linear layer
    fused = fuse_conv_bn(model.eval())
    original = {p.data_ptr() for p in model.parameters()}
    assert not original & {p.data_ptr() for p in fused.parameters()}


def test_half_precision_conv_keeps_its_dtype():
    model = randomize_bn(ConvBN(nn.Conv2d(3, 4, 3))).eval()
    reference = fuse_conv_bn_eval(model.conv.double(), model.bn.double())
    model.conv.half()  # the BN stays in float32, as in mixed-precision inference
    model.bn.float()
    fused = fold_conv_bn(model.conv, model.bn)
    assert fused.weight.dtype == torch.float16 and fused.bias.dtype == torch.float16
    torch.testing.assert_close(fused.weight, reference.weight.half())


def test_float64_conv_with_float32_bn_keeps_float64_accuracy():
    conv = nn.Conv2d(3, 4, 3, dtype=torch.float64).eval()
    bn = nn.BatchNorm2d(4, eps=0.0).eval()  # float32; scale 2 and shift 0.5 are exact
    with torch.no_grad():
        bn.weight.fill_(2.0)
        bn.bias.fill_(0.5)
        conv.weight.fill_(1 + 1e-12)  # not representable in float32
    fused = fold_conv_bn(conv, bn)
    assert fused.weight.dtype == torch.float64
    assert torch.equal(fused.weight, 2 * conv.weight)
    assert torch.equal(fused.bias, 2 * conv.bias + 0.5)


def test_conv1d_and_conv3d():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3))
    model3d = nn.Sequential(nn.Conv3d(2, 3, 3, groups=1, dilation=2), nn.BatchNorm3d(3))
    for net, x in ((model, torch.randn(2, 2, 10)), (model3d, torch.randn(1, 2, 7, 7, 7))):
        net = randomize_bn(net).eval()
        fused = fuse_conv_bn(net)
        assert bn_targets(fused) == []
        with torch.no_grad():
            torch.testing.assert_close(fused(x), net(x))


def nested_model() -> nn.Module:
    def block(c: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()
        )

    return nn.Sequential(
        nn.Sequential(block(3), block(3)),
        nn.Sequential(nn.Sequential(block(3)), nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)),
    )


def test_nested_sequentials_are_folded():
    torch.manual_seed(3)
    model = randomize_bn(nested_model()).eval()
    x = torch.randn(2, 3, 8, 8)
    before = fx.symbolic_trace(model)
    targets = [n.target for n in before.graph.nodes if n.op == "call_module"]
    assert "0.1.0" in targets and "1.0.0.1" in targets  # dotted paths into nested Sequentials
    fused = fuse_conv_bn(model)
    assert len(bn_targets(before)) == 4
    assert bn_targets(fused) == []
    assert not any(
        isinstance(fused.get_submodule(n.target), nn.BatchNorm2d)
        for n in fused.graph.nodes
        if n.op == "call_module"
    )
    fused.graph.lint()
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))


class KeywordBatchNorm(nn.Module):
    """A conv, then a BatchNorm given its input by keyword, as `self.bn(input=h)` traces."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(input=self.conv(x))


def test_a_batchnorm_given_its_input_by_keyword_is_folded():
    """conv_feeding read bn_node.args[0] only, so such a pair was never folded (known fault)."""
    torch.manual_seed(4)
    model = randomize_bn(KeywordBatchNorm()).eval()
    x = torch.randn(2, 3, 8, 8)
    before = fx.symbolic_trace(model)
    (bn_call,) = [n for n in before.graph.nodes if n.target == "bn"]
    assert (bn_call.args, list(bn_call.kwargs)) == ((), ["input"])
    fused = fuse_conv_bn(model)
    assert bn_targets(fused) == []
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))


def test_matches_torch_fx_fuse_on_resnet18():
    from torch.fx.experimental.optimization import fuse
    from torchvision.models import resnet18

    torch.manual_seed(4)
    model = randomize_bn(resnet18(weights=None)).eval()
    x = torch.randn(1, 3, 64, 64)
    ours, theirs = fuse_conv_bn(model), fuse(model)
    assert bn_targets(ours) == []
    ours.graph.lint()
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(ours(x), expected, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-4, atol=1e-4)


class ConvOutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        z = self.conv(x)
        return self.bn(z) + z


class SharedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.conv(self.bn(self.conv(x)))


@pytest.mark.parametrize("model_class", [ConvOutputUsedTwice, SharedConv])
def test_refuses_unsafe_pairs(model_class):
    torch.manual_seed(5)
    model = randomize_bn(model_class()).eval()
    x = torch.randn(1, 3, 6, 6)
    traced = fx.symbolic_trace(model)
    candidates = find_candidates(traced)
    assert len(candidates) == 1 and not candidates[0].foldable
    fused = fuse_conv_bn(model)
    assert bn_targets(fused) == ["bn"]
    assert str(fused.graph) == str(traced.graph)
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))


def test_refuses_one_conv_object_under_two_targets():
    torch.manual_seed(6)
    gm = fx.symbolic_trace(randomize_bn(SharedConv()).eval())
    gm.add_submodule("alias", gm.conv)  # same object, second name
    last_conv = [n for n in gm.graph.nodes if n.op == "call_module"][-1]
    last_conv.target = "alias"
    gm.recompile()
    x = torch.randn(1, 3, 6, 6)
    with torch.no_grad():
        expected = gm(x)
        fused = fuse_conv_bn(gm)
        assert bn_targets(fused) == ["bn"]
        torch.testing.assert_close(fused(x), expected)


def test_refuses_when_conv_weights_are_read_by_get_attr():
    class ReadsWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)
            self.bn = nn.BatchNorm2d(3)

        def forward(self, x):
            return self.bn(self.conv(x)) * self.conv.weight.sum()

    model = randomize_bn(ReadsWeight()).eval()
    assert bn_targets(fuse_conv_bn(model)) == ["bn"]


def test_refusal_reasons_name_the_problem():
    used_twice = find_candidates(fx.symbolic_trace(ConvOutputUsedTwice().eval()))[0]
    shared = find_candidates(fx.symbolic_trace(SharedConv().eval()))[0]
    assert "also used by add" in used_twice.refusal
    assert "shared" in shared.refusal


def test_folds_the_safe_pair_next_to_an_unsafe_one():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.unsafe = ConvOutputUsedTwice()
            self.conv = nn.Conv2d(3, 3, 1)
            self.bn = nn.BatchNorm2d(3)

        def forward(self, x):
            return self.bn(self.conv(self.unsafe(x)))

    model = randomize_bn(Mixed()).eval()
    fused = fuse_conv_bn(model)
    assert bn_targets(fused) == ["unsafe.bn"]
    x = torch.randn(1, 3, 5, 5)
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))


def test_bn_without_running_stats_is_not_folded():
    model = nn.Sequential(nn.Conv2d(3, 3, 3), nn.BatchNorm2d(3, track_running_stats=False)).eval()
    fused = fuse_conv_bn(model)
    assert bn_targets(fused) == ["1"]


def test_training_mode_raises():
    model = randomize_bn(nested_model()).train()
    with pytest.raises(ValueError, match="eval"):
        fuse_conv_bn(model)
    with pytest.raises(ValueError, match="eval"):
        fold_conv_bn(model[0][0][0], model[0][0][1])


def test_training_mode_raises_even_for_pairs_it_would_not_fold():
    with pytest.raises(ValueError, match="training"):
        fuse_conv_bn(SharedConv().train())


def test_inplace_changes_the_given_graph_module_only_when_asked():
    model = randomize_bn(nested_model()).eval()
    traced = fx.symbolic_trace(model)
    copy_result = fuse_conv_bn(traced)
    assert copy_result is not traced and len(bn_targets(traced)) == 4
    inplace_result = fuse_conv_bn(traced, inplace=True)
    assert inplace_result is traced and bn_targets(traced) == []


@pytest.mark.end_to_end
def test_bench_cli_prints_medians_spreads_and_conclusions():
    command = [sys.executable, "-m", "fxcourse.bench_fusion", "--batch", "1", "--size", "32"]
    command += ["--min-run-time", "0.05", "--device", "cpu", "--threads", "1", "--rounds", "6"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "device cpu, num_threads=1, wall clock, 6 rounds" in result.stdout
    assert "CUDA_HOME" not in result.stderr
    for variant in ("unfused", "chapter fuser", "torch fuse", FLOOR):
        row = re.search(
            rf"^{re.escape(variant)}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+) \(([\d.]+) to ([\d.]+)\)$",
            result.stdout,
            re.MULTILINE,
        )
        assert row, f"no row for {variant!r} in:\n{result.stdout}"
        median_ms, iqr_ms, ratio, ratio_q1, ratio_q3 = map(float, row.groups())
        assert median_ms > 0 and iqr_ms >= 0 and ratio_q1 <= ratio <= ratio_q3
    assert re.search(r"^unfused .* 1\.000 \(1\.000 to 1\.000\)$", result.stdout, re.MULTILINE)
    assert "BatchNorm's share of the unfused ResNet-18 forward time here: " in result.stdout
    verdicts = re.findall(r"^chapter fuser vs (.+?): (.+)$", result.stdout, re.MULTILINE)
    assert [other for other, _ in verdicts] == ["unfused", "torch fuse", FLOOR]
    assert re.search(r"^Verdict: .+$", result.stdout, re.MULTILINE), result.stdout


def test_bench_cli_refuses_the_thread_clock_with_several_threads():
    command = [sys.executable, "-m", "fxcourse.bench_fusion", "--clock", "thread"]
    command += ["--threads", "2", "--device", "cpu"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "--clock thread sees a whole forward pass only with --device cpu --threads 1" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def _result(**round_times: list[float]) -> BenchResult:
    names = {"unfused": "unfused", "chapter": "chapter fuser", "floor": FLOOR}
    result = BenchResult("cpu", 1, 64, 1)
    result.round_times = {names[key]: times for key, times in round_times.items()}
    return result


def test_the_brief_report_ends_in_the_verdict_without_each_comparison():
    result = _result(unfused=[10.0] * 15, chapter=[9.5] * 15, floor=[9.0] * 15)
    lines = format_result(result, detailed=False).splitlines()
    assert lines[-1] == fold_verdict(result)
    assert lines[-2].startswith("BatchNorm's share of the unfused ResNet-18 forward time")
    assert not [line for line in lines if " vs " in line]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_table_keeps_its_columns_apart_in_every_language(language):
    from fxcourse.messages import _, speaking

    result = _result(unfused=[10.0] * 15, chapter=[9.5] * 15, floor=[9.0] * 15)
    with speaking(language):
        header = format_result(result, detailed=False).splitlines()[1]
        median, spread = _("median ms"), _("IQR ms")
    assert re.search(f"{re.escape(median)} +{re.escape(spread)} ", header), header


def test_comparisons_are_made_round_by_round_against_unfused():
    unfused = [10.0 + 0.3 * (i % 3) for i in range(15)]
    result = _result(unfused=unfused, chapter=[0.9 * t for t in unfused], floor=unfused)
    comparison = result.compare("chapter fuser")
    assert comparison.per_round == pytest.approx([0.9] * 15)
    assert comparison.describe().startswith("chapter fuser vs unfused: 10.0% faster\n")
    noisy = [10.0 * (0.9 if i % 2 else 1.1) for i in range(15)]  # 7 faster, 8 slower rounds
    assert not _result(unfused=[10.0] * 15, chapter=noisy, floor=noisy).compare(FLOOR).measurable


def test_bn_share_reports_the_median_saving_and_its_spread():
    unfused = [20.0] * 15
    floor = [20.0 * (0.95 - 0.002 * i) for i in range(15)]  # saves 5.0%, 5.2%, ..., 7.8%
    share = _result(unfused=unfused, chapter=unfused, floor=floor).bn_share()
    assert share.startswith("BatchNorm's share of the unfused ResNet-18 forward time here: 6.4%")
    assert share.endswith("(middle half of the rounds 5.7% to 7.1%)")
    noisy = [20.0 * (0.9 if i % 2 else 1.1) for i in range(15)]
    unclear = _result(unfused=unfused, chapter=unfused, floor=noisy).bn_share()
    assert unclear.endswith(", not measurable in this run")


def test_thread_clock_is_refused_where_it_would_miss_work():
    with pytest.raises(ValueError, match="one thread"):
        run_fusion_benchmark(device="cpu", num_threads=2, clock="thread")
    with pytest.raises(ValueError, match="clock must be one of"):
        run_fusion_benchmark(clock="sundial")


def test_plot_shows_one_row_of_round_ratios_per_variant():
    import matplotlib

    matplotlib.use("Agg")
    unfused = [10.0] * 15
    result = _result(unfused=unfused, chapter=[9.0] * 15, floor=[8.5] * 15)
    ax = plot_result(result)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["chapter fuser", FLOOR]
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert [list(line.get_xdata()) for line in dots] == [[0.9] * 15, [0.85] * 15]


def test_the_floor_erases_every_batchnorm_and_calls_what_the_folded_network_calls():
    model = randomize_bn(nested_model()).eval()
    floor, fused = bn_erased(model), fuse_conv_bn(model)
    assert bn_targets(floor) == [] and len(bn_targets(fx.symbolic_trace(model))) == 4
    calls = [[n.target for n in gm.graph.find_nodes(op="call_module")] for gm in (floor, fused)]
    assert calls[0] == calls[1]
    without_bn = copy.deepcopy(model)
    for name in bn_targets(fx.symbolic_trace(model)):
        without_bn.set_submodule(name, nn.Identity())
    image = torch.randn(1, 3, 8, 8)
    torch.testing.assert_close(floor(image), without_bn(image))


def test_fold_verdict_follows_the_sign_tests():
    unfused = [10.0] * 15
    noisy = [10.0 * (0.9 if i % 2 else 1.1) for i in range(15)]  # 7 faster, 8 slower rounds
    unclear = _result(unfused=unfused, chapter=[9.0] * 15, floor=noisy)
    assert fold_verdict(unclear).startswith("Verdict: erasing BatchNorm saves no measurable time")
    between = [8.0 if i % 2 else 11.0 for i in range(15)]  # beats unfused and floor 7 times
    unsure = _result(unfused=unfused, chapter=between, floor=[9.0] * 15)
    assert "cannot be told apart from unfused nor from the floor" in fold_verdict(unsure)
    reaches = _result(unfused=unfused, chapter=[0.9 * t for t in noisy], floor=[9.0] * 15)
    assert "recovers all of BatchNorm's 10.0%" in fold_verdict(reaches)
    half_way = _result(unfused=unfused, chapter=[9.5] * 15, floor=[9.0] * 15)
    assert fold_verdict(half_way).endswith(
        "recovers about 50% of BatchNorm's 10.0% (medians of the round ratios)."
    )
    no_saving = _result(unfused=unfused, chapter=[10.5] * 15, floor=[9.0] * 15)
    assert fold_verdict(no_saving).endswith("saves nothing measurable.")
    below_floor = _result(unfused=unfused, chapter=[8.5] * 15, floor=[9.0] * 15)
    assert "reached the floor and ran 5.6% faster still" in fold_verdict(below_floor)
