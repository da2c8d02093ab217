# Generated from chapters/exercises/ex1_sigmoid_to_tanh/verify.py and
# courseware/locale/zh/ex1_sigmoid_to_tanh.verify.po by `make chapters`; course maintainers: edit
# those, not this one.
"""练习 1 测试单元格所用的检查，以及它们的模型 Wrap。单元格在它们构建的模型上调用这些函数；评分程序在它自己的隐藏模型上，对你的 pass 返回的图调用完全相同的函数。每个检查都会抛出一个 AssertionError，说明该改什么。
"""

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

SIGMOID_FUNCTIONS = (torch.sigmoid, F.sigmoid, torch.special.expit)
SIGMOID_METHODS = ("sigmoid", "sigmoid_")
# tanh 作为函数节点的每一种写法：计算相同，所以都接受。
TANH_FUNCTIONS = (torch.tanh, F.tanh, torch.Tensor.tanh)


class Wrap(nn.Module):
    """一个线性层，接着是 `activation`（被测试的写法），再乘以 2。它的权重在
    torch.manual_seed(0) 之后抽取：无论激活函数是什么都相同。"""

    def __init__(self, activation, width: int = 4):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(width, width)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.lin(x)) * 2


def misnamed() -> torch.fx.GraphModule:
    """一个名字会误导人的图，就像某个 pass 给自己新建的节点随意起名：一个名叫
    `sigmoid` 的 ReLU 节点，后面是一个名叫 `gate` 的 sigmoid。重写时要靠 op 和 target 区分节点。"""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    relu = graph.create_node("call_function", torch.relu, (x,), name="sigmoid")
    graph.output(graph.create_node("call_function", torch.sigmoid, (relu,), name="gate"))
    return torch.fx.GraphModule(nn.Module(), graph)


def check_returns_module(kind: str) -> None:
    """kind：pass 返回的对象的类型名。"""
    assert kind == "GraphModule", f"应返回 GraphModule，而不是 {kind}"


def is_sigmoid(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    if node.op == "call_function":
        return any(node.target is f for f in SIGMOID_FUNCTIONS)
    if node.op == "call_method":
        return node.target in SIGMOID_METHODS
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid)


def is_tanh(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """tanh 无论写成函数、方法还是模块，都是同一回事。"""
    if node.op == "call_function":
        return any(node.target is f for f in TANH_FUNCTIONS)
    if node.op == "call_method":
        return node.target == "tanh"
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Tanh)


def computes(gm: torch.fx.GraphModule, names: list[str]) -> list[tuple]:
    """gm 的每个节点按顺序计算什么：(op, target, 参数, 子模块类型)；任何 tanh 都记为
    ("tanh", 参数)。参数中的节点按它在 `names`（原图的名字）中的位置命名：新节点替代旧节点的位置，就算作同一个节点。"""
    nodes = list(gm.graph.nodes)
    at = {node: names[i] if i < len(names) else node.name for i, node in enumerate(nodes)}
    found = []
    for node in nodes:
        args = torch.fx.node.map_arg((node.args, node.kwargs), at.__getitem__)
        if is_tanh(gm, node):
            found.append(("tanh", args))
        else:
            module = gm.get_submodule(node.target) if node.op == "call_module" else None
            kind = None if module is None else type(module).__name__
            found.append((node.op, node.target, args, kind))
    return found


def tanh_of(form: tuple) -> tuple:
    """一个 sigmoid 节点必须变成什么：x.sigmoid_() 变成原地的 x.tanh_()，其余的变成 tanh。"""
    if form[:2] == ("call_method", "sigmoid_"):
        return ("call_method", "tanh_", form[2], None)
    return ("tanh", form[2])


def target_name(target) -> str:
    """节点的 target，按 `print(graph)` 的叫法：函数连同它所在的模块（torch.tanh、
    math.tanh），这样两个同名函数绝不会显示成同一个样子。"""
    return target if isinstance(target, str) else torch.fx.Node._pretty_print_target(target)


def shown(form: tuple) -> str:
    """把 computes() 给出的一个节点写成消息里的文字。"""
    if form[0] == "tanh":
        call, (args, kwargs) = "一个 tanh（torch.tanh、F.tanh、x.tanh() 或 nn.Tanh），参数为 ", form[1]
    else:
        call, (args, kwargs) = f"{form[0]} {target_name(form[1])}", form[2]
    return f"{call}{args}" + (f" {kwargs}" if kwargs else "")


def check_rewrite(original, rewritten, what: str, others_only: bool = False) -> None:
    """重写后的模块（rewritten，即 pass 重写 original 的一份副本所得）在 original 计算 sigmoid 的每个位置，都以相同的参数计算 tanh，其余每个节点都与 original 相同，顺序也相同。带 others_only 时，只检查不是 sigmoid 的节点。"""
    check_returns_module(type(rewritten).__name__)
    left = [node.name for node in rewritten.graph.nodes if is_sigmoid(rewritten, node)]
    assert others_only or not left, (
        f"{what}：重写后的图在 {left} 中仍然计算 sigmoid"
    )
    names = [node.name for node in original.graph.nodes]
    before, after = computes(original, names), computes(rewritten, names)
    assert len(after) == len(before), f"{what}：pass 增加或删除了节点"
    for name, node, old, new in zip(names, original.graph.nodes, before, after, strict=True):
        sigmoid = is_sigmoid(original, node)
        if others_only and sigmoid:
            continue
        want = tanh_of(old) if sigmoid else old
        kind = "sigmoid 必须变成同一输入的 tanh：" if sigmoid else "有节点被改动了："
        assert new == want, f"{what}：{kind}{name} 应为 {shown(want)}，而不是 {shown(new)}"


def check_same_output(got, expected: torch.Tensor, what: str, hint: str = "") -> None:
    same = isinstance(got, torch.Tensor) and got.dtype == expected.dtype
    assert same and torch.equal(got, expected), (
        f"{what}：输出与 tanh 模型的输出不同{hint}"
    )


def check_against(rewritten, tanh_model, x: torch.Tensor, what: str) -> torch.Tensor:
    """重写后的模块在 x 上给出的结果与用 tanh 写成的模型完全相同；返回这个输出。代码与图不一致的模块，会在报告差异时一并得知这一点。"""
    with torch.no_grad():
        expected = tanh_model(x.clone())
        got = rewritten(x.clone())
    found = hygiene(rewritten) if isinstance(rewritten, torch.fx.GraphModule) else {}
    stale = found.get("code") != found.get("graph_code")
    hint = (
        "（gm.code 现在不是它的图生成的代码：调用过 gm.recompile() 吗？）" if stale else ""
    )
    check_same_output(got, expected, what, hint)
    return expected


def hygiene(gm) -> dict:
    """check_hygiene 从模块上读取的内容：它的图为什么通不过 lint（通过则为 None）、它的代码，以及它的图现在生成的代码。"""
    try:
        gm.graph.lint()
        error = None
    except Exception as exc:  # noqa: BLE001 - reported by check_hygiene
        error = f"{type(exc).__name__}: {exc}"
    return {"lint": error, "code": gm.code, "graph_code": gm.graph.python_code("self").src}


def check_hygiene(found: dict) -> None:
    assert found["lint"] is None, f"gm.graph.lint() 失败：{found['lint']}"
    stale = found["code"] != found["graph_code"]
    assert not stale, "gm.code 与图不一致：编辑图之后要调用 gm.recompile()"


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
