"""Fold eval-mode BatchNorm into the convolution that feeds it: the FX pass of chapter 4.

    from fxcourse.fusion import fuse_conv_bn
    fused = fuse_conv_bn(model.eval())   # a new GraphModule; `model` is left as it was

In eval mode a BatchNorm layer is a fixed per-channel affine map, y = a * z + b, so it can be
absorbed into the weight and bias of the convolution that produces z. The pass folds a pair only
when that is safe: the conv's output feeds nothing but the BN, and the conv module is called at
one node only (otherwise changing its weights would change the other call too).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.fx as fx
from torch import nn

from fxcourse.messages import _, listing

# Exact types on purpose: a subclass may override forward() (e.g. standardize its weight), and
# folding numbers into such a module would be wrong. Transposed convs are not matched either:
# their weight keeps output channels in dimension 1, not 0.
CONV_TO_BN: dict[type[nn.Module], type[nn.Module]] = {
    nn.Conv1d: nn.BatchNorm1d,
    nn.Conv2d: nn.BatchNorm2d,
    nn.Conv3d: nn.BatchNorm3d,
}


@dataclass
class Candidate:
    """A conv node whose only argument feeds a BN node; `refusal` says why it is not folded."""

    conv_node: fx.Node
    bn_node: fx.Node
    refusal: str | None = None

    @property
    def foldable(self) -> bool:
        return self.refusal is None


def bn_scale_and_shift(bn: nn.modules.batchnorm._BatchNorm) -> tuple[torch.Tensor, torch.Tensor]:
    """The eval-mode BN as y = scale * z + shift, one (scale, shift) per channel.

    Computed in at least float32 so that half-precision models do not lose accuracy here.
    """
    if bn.running_mean is None or bn.running_var is None:
        said = _("this BatchNorm keeps no running statistics (track_running_stats=False)")
        raise ValueError(said)
    dtype = torch.promote_types(bn.running_var.dtype, torch.float32)
    mean, var = bn.running_mean.to(dtype), bn.running_var.to(dtype)
    gamma = bn.weight.to(dtype) if bn.weight is not None else torch.ones_like(var)
    beta = bn.bias.to(dtype) if bn.bias is not None else torch.zeros_like(var)
    scale = gamma / torch.sqrt(var + bn.eps)
    return scale, beta - scale * mean


def folded_weight_and_bias(
    weight: torch.Tensor, bias: torch.Tensor | None, scale: torch.Tensor, shift: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """W' = scale * W (per output channel, dimension 0) and b' = scale * b + shift.

    With shift = beta - scale * mean, b' is scale * (b - mean) + beta, as derived in chapter 4.
    """
    per_out_channel = (-1,) + (1,) * (weight.dim() - 1)
    # Work in the wider dtype of conv and BN, so that a float64 conv keeps float64 accuracy.
    dtype = torch.promote_types(weight.dtype, scale.dtype)
    scale, shift = scale.to(dtype), shift.to(dtype)
    new_weight = weight.to(dtype) * scale.reshape(per_out_channel)
    old_bias = bias.to(dtype) if bias is not None else torch.zeros_like(shift)
    new_bias = scale * old_bias + shift
    # Results keep the conv's own dtype (a conv without bias takes its weight's dtype).
    return new_weight.to(weight.dtype), new_bias.to(weight.dtype)


def fold_conv_bn(conv: nn.Module, bn: nn.Module) -> nn.Module:
    """A new conv equal to bn(conv(x)) in eval mode; `conv` and `bn` are not changed.

    The new module is a deep copy of `conv`, so stride, padding, padding_mode, dilation, groups,
    dtype and device all carry over; only the weight and bias are replaced.
    """
    if conv.training or bn.training:
        said = _(
            "fold_conv_bn needs eval mode: in training BatchNorm normalizes with the statistics "
            "of each batch, which no fixed weight can reproduce; call model.eval() first"
        )
        raise ValueError(said)
    scale, shift = bn_scale_and_shift(bn)
    weight, bias = folded_weight_and_bias(conv.weight.detach(), _detached(conv.bias), scale, shift)
    fused = copy.deepcopy(conv)
    fused.weight = nn.Parameter(weight, requires_grad=conv.weight.requires_grad)
    fused.bias = nn.Parameter(bias, requires_grad=conv.weight.requires_grad)
    return fused


def _detached(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return None if tensor is None else tensor.detach()


def find_candidates(gm: fx.GraphModule) -> list[Candidate]:
    """Every conv -> bn edge in the graph, each with the reason it cannot be folded (if any)."""
    calls_per_module = _count_module_calls(gm)
    candidates = []
    for bn_node in gm.graph.nodes:
        conv_node = conv_feeding(gm, bn_node)
        if conv_node is not None:
            refusal = refusal_reason(gm, conv_node, bn_node, calls_per_module)
            candidates.append(Candidate(conv_node, bn_node, refusal))
    return candidates


def conv_feeding(gm: fx.GraphModule, bn_node: fx.Node) -> fx.Node | None:
    """The conv node that is the only input of `bn_node` (given by position or as `input=`),
    when the pair has matching types."""
    if bn_node.op != "call_module" or len(bn_node.all_input_nodes) != 1:
        return None
    (conv_node,) = bn_node.all_input_nodes
    if conv_node.op != "call_module":
        return None
    conv_type = type(gm.get_submodule(conv_node.target))
    bn_type = type(gm.get_submodule(bn_node.target))
    return conv_node if CONV_TO_BN.get(conv_type) is bn_type else None


def _count_module_calls(gm: fx.GraphModule) -> dict[int, int]:
    """How many call_module nodes run each module object (keyed by id, so aliases count too)."""
    counts: dict[int, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            key = id(gm.get_submodule(node.target))
            counts[key] = counts.get(key, 0) + 1
    return counts


def refusal_reason(
    gm: fx.GraphModule, conv_node: fx.Node, bn_node: fx.Node, calls_per_module: dict[int, int]
) -> str | None:
    """Why folding this pair would change what the graph computes; None when it is safe."""
    conv, bn = gm.get_submodule(conv_node.target), gm.get_submodule(bn_node.target)
    if len(conv_node.users) > 1:
        others = sorted(user.name for user in conv_node.users if user is not bn_node)
        return _("the conv output is also used by {users}").format(users=listing(others))
    if calls_per_module[id(conv)] > 1:
        calls = calls_per_module[id(conv)]
        return _("the conv module is shared: it is called at {calls} nodes").format(calls=calls)
    if _weights_read_elsewhere(gm, conv_node.target):
        return _("the conv's parameters are read by a get_attr node")
    if bn.running_mean is None:
        return _("the BatchNorm has no running statistics (track_running_stats=False)")
    return None


def _weights_read_elsewhere(gm: fx.GraphModule, conv_target: str) -> bool:
    prefix = conv_target + "."
    return any(n.op == "get_attr" and n.target.startswith(prefix) for n in gm.graph.nodes)


def replace_submodule(gm: fx.GraphModule, target: str, new_module: nn.Module) -> None:
    """Put `new_module` at a dotted path such as 'layer1.0.conv1' (inside nested containers)."""
    parent_path, _, name = target.rpartition(".")
    setattr(gm.get_submodule(parent_path), name, new_module)


def _check_eval_mode(gm: fx.GraphModule, candidates: list[Candidate]) -> None:
    training = [
        c.bn_node.target
        for c in candidates
        if gm.get_submodule(c.bn_node.target).training
        or gm.get_submodule(c.conv_node.target).training
    ]
    if training:
        said = _(
            "conv/BN pairs in training mode ({pairs}): BatchNorm then normalizes with batch "
            "statistics, so it cannot be folded; call model.eval() before fusing"
        )
        raise ValueError(said.format(pairs=listing(training)))


def fuse_conv_bn(
    model: nn.Module, *, inplace: bool = False, verbose: bool = False
) -> fx.GraphModule:
    """Fold every safe conv -> BatchNorm pair of `model` (traced first if it is not a GraphModule).

    Raises ValueError when a conv/BN pair is in training mode. Pairs that are unsafe to fold (see
    `refusal_reason`) are left alone; with verbose=True each decision is printed. By default the
    result shares no parameters with `model`; inplace=True folds a GraphModule where it stands.
    """
    if isinstance(model, fx.GraphModule):
        gm = model if inplace else copy.deepcopy(model)
    else:
        gm = fx.symbolic_trace(model if inplace else copy.deepcopy(model))
    candidates = find_candidates(gm)
    _check_eval_mode(gm, candidates)
    for candidate in candidates:
        if verbose:
            print(_describe(candidate))
        if candidate.foldable:
            fold_pair(gm, candidate)
    gm.graph.lint()
    gm.recompile()
    return gm


def fold_pair(gm: fx.GraphModule, candidate: Candidate) -> None:
    """Swap in the folded conv, send the BN node's users to the conv node, drop the BN."""
    conv_node, bn_node = candidate.conv_node, candidate.bn_node
    conv, bn = gm.get_submodule(conv_node.target), gm.get_submodule(bn_node.target)
    replace_submodule(gm, conv_node.target, fold_conv_bn(conv, bn))
    bn_node.replace_all_uses_with(conv_node)
    gm.graph.erase_node(bn_node)
    if not any(n.op == "call_module" and n.target == bn_node.target for n in gm.graph.nodes):
        gm.delete_submodule(bn_node.target)


def _describe(candidate: Candidate) -> str:
    pair = f"{candidate.conv_node.target} -> {candidate.bn_node.target}"
    if candidate.foldable:
        return _("fold {pair}").format(pair=pair)
    return _("skip {pair}: {reason}").format(pair=pair, reason=candidate.refusal)
