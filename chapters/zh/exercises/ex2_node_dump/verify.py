# Generated from chapters/exercises/ex2_node_dump/verify.py and
# courseware/locale/zh/ex2_node_dump.verify.po by `make chapters`; course maintainers: edit those,
# not this one.
"""练习 2 测试单元格所用的检查。单元格在它们构建的图上调用这些函数；评分程序对你的代码在它自己的隐藏图上得到的结果调用完全相同的函数，并使用它为这些图算出的期望值。每个检查都会抛出一个
AssertionError，说明该改什么。
"""

import torch
import torch.fx
import torch.nn as nn

KEYS = ("name", "op", "target", "args", "kwargs", "users", "refers_to")


class Example(nn.Module):
    """测试单元格的示例（评分程序的隐藏示例加的是另一个常数）。"""

    def __init__(self, constant: int = 1):
        super().__init__()
        self.lin, self.constant = nn.Linear(3, 3), constant
        self.scale = nn.Parameter(torch.ones(3, dtype=torch.float32))
        self.register_buffer("shift", torch.zeros(1, 3, dtype=torch.float64))

    def forward(self, x):
        h = self.lin(x) * self.scale + self.constant
        return torch.cat([h.relu(), x + self.shift, h.relu()], dim=1)


def records(rows) -> dict[str, dict]:
    """dump_nodes 的返回值，按节点名索引。"""
    assert isinstance(rows, list), f"dump_nodes 应返回列表，而不是 {type(rows).__name__}"
    for row in rows:
        assert isinstance(row, dict), f"每条记录都应是字典，而不是 {type(row).__name__}"
        assert "name" in row, f"有一条记录没有 'name'：{row!r}"
    return {row["name"]: row for row in rows}


def check_records(rows, nodes: list[tuple[str, str, int]]) -> None:
    """nodes：每个节点的 (name, op, 使用者个数)，按图中顺序。"""
    records(rows)
    assert len(rows) == len(nodes), f"应有 {len(nodes)} 个字典，每个节点一个；实际得到 {len(rows)} 个"
    for row, (name, op, used) in zip(rows, nodes, strict=True):
        assert set(row) == set(KEYS), f"{name}：键必须是 {KEYS}，实际得到 {tuple(row)}"
        got = (row["name"], row["op"])
        assert got == (name, op), f"按图中顺序，这里应是节点 {name}（{op}）；实际得到 {got}"
        users = row["users"]
        assert isinstance(users, list) and len(users) == used, (
            f"{name}：有 {used} 个节点使用它，所以它的 'users' 是含 {used} 个名字的列表；得到的是 {users!r}"
        )


def check_values(rows, key: str, want: dict) -> None:
    """`want` 中列出的每个节点，其记录在 `key` 下的值为 want[name]。"""
    found = records(rows)
    for name, value in want.items():
        assert name in found, f"没有节点 {name!r} 的记录"
        assert key in found[name], f"{name}：记录中没有 {key!r}"
        got = found[name][key]
        nodes = "（这些是 Node 对象，打印出来就是它们的名字：请给出 node.name）" * holds_nodes(got)
        assert got == value, f"{name}：{key} 应为 {value!r}，实际得到 {got!r}{nodes}"


def holds_nodes(value) -> bool:
    """`value` 是否在任意深度上含有 torch.fx.Node：Node 打印出来就是它的名字，所以显示它的消息看起来就像它本该包含的那些名字。"""
    if isinstance(value, torch.fx.Node):
        return True
    if isinstance(value, dict):
        return any(holds_nodes(key) or holds_nodes(item) for key, item in value.items())
    if isinstance(value, slice):
        value = (value.start, value.stop, value.step)
    return isinstance(value, list | tuple | set) and any(holds_nodes(item) for item in value)


def kind_of(value) -> str:
    """ 任何 GraphModule 都记为 "GraphModule"（追踪会按模型的类名给它的类命名），否则为 value 的类型名。"""
    return "GraphModule" if isinstance(value, torch.fx.GraphModule) else type(value).__name__


def check_returns_graph_module(kind: str) -> None:
    """kind：kind_of(merge 的返回值)。"""
    assert kind == "GraphModule", f"merge 应返回 GraphModule，而不是 {kind}"


def check_merge(before: torch.fx.GraphModule, after: torch.fx.GraphModule, a: str, b: str):
    """`after` 就是 `before` 删除了节点 a、b 中靠后的那个，并让它的使用者改为读取靠前的那个；其他什么都没变。"""
    order = [node.name for node in before.graph.nodes]
    keep, drop = sorted((a, b), key=order.index)
    names = [node.name for node in after.graph.nodes]
    want = [name for name in order if name != drop]
    message = f"保留 {keep}（它在前面），删除 {drop}：节点应为 {want}，实际得到 {names}"
    assert names == want, message
    reads = {node.name: inputs(node, {drop: keep}) for node in before.graph.nodes}
    for node in after.graph.nodes:
        want, got = reads[node.name], inputs(node, {})
        assert got == want, f"{node.name}：它应读取 {want}，实际读取 {got}"


def inputs(node: torch.fx.Node, renamed: dict) -> list[str]:
    """`node` 读取的各节点的名字，每个只记一次，并按 `renamed` 改名。"""
    names = (renamed.get(other.name, other.name) for other in node.all_input_nodes)
    return list(dict.fromkeys(names))


def check_recompiled(code: str, graph_code: str) -> None:
    """code：GraphModule 的代码；graph_code：它的图现在生成的代码。"""
    assert code == graph_code, "gm.code 运行的仍是原来的图：请调用 gm.recompile()"


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
