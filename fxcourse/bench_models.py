"""The four versions of ResNet-18 that fxcourse.bench_fusion times: the network with non-trivial
BatchNorm statistics, traced as it is, folded by the chapter's fuser and by torch's, and with
every BatchNorm erased (the floor)."""

from __future__ import annotations

import copy

import torch
import torch.fx as fx
from torch import nn
from torch.fx.experimental.optimization import fuse

from fxcourse.fusion import fuse_conv_bn

BASELINE = "unfused"
FLOOR = "BN erased"


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


def bn_erased(model: nn.Module) -> fx.GraphModule:
    """`model` traced, with every BatchNorm node erased (different outputs!): its users read the
    BatchNorm's input instead. Unlike BatchNorm swapped for nn.Identity, which is still a module
    call, nothing of BatchNorm is left, so the graph makes the calls a folded network makes."""
    gm = fx.symbolic_trace(copy.deepcopy(model))
    for node in list(gm.graph.find_nodes(op="call_module")):
        if isinstance(gm.get_submodule(node.target), nn.modules.batchnorm._BatchNorm):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm


def build_variants(model: nn.Module) -> dict[str, fx.GraphModule]:
    """The four versions, each an FX GraphModule so that only the folding differs."""
    return {
        BASELINE: fx.symbolic_trace(copy.deepcopy(model)),
        "chapter fuser": fuse_conv_bn(model),
        "torch fuse": fuse(model),
        FLOOR: bn_erased(model),
    }


def check_outputs_match(variants: dict[str, nn.Module], example: torch.Tensor) -> None:
    """Both fused versions compute what the unfused network computes (up to rounding)."""
    with torch.inference_mode():
        expected = variants[BASELINE](example)
        for name in ("chapter fuser", "torch fuse"):
            torch.testing.assert_close(variants[name](example), expected, rtol=1e-4, atol=1e-4)
