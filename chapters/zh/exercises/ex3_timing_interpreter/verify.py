# Generated from chapters/exercises/ex3_timing_interpreter/verify.py and
# courseware/locale/zh/ex3_timing_interpreter.verify.po by `make chapters`; course maintainers:
# edit those, not this one.
"""练习 3 测试单元格所用的检查。单元格在 `net` 上调用这些函数；评分程序对你的 TimingInterpreter
在它自己的隐藏模型上的结果调用完全相同的函数。每个检查都会抛出一个 AssertionError，说明该改什么。
notebook 的准备单元格从这里导入 TIMED_OPS 和 target_text。
"""

import math
import time

import torch
import torch.fx
import torch.nn as nn

TIMED_OPS = ("call_function", "call_method", "call_module")
MOST_SECONDS = 60  # 测试用的小模型里，没有哪个节点会花上一分钟
NAP_SECONDS = 0.02  # `nap` 睡眠多久


def target_text(node: torch.fx.Node) -> str:
    """target 在 `print(gm.graph)` 中 `target=` 之后显示的样子（练习 2 的规则）。"""
    if isinstance(node.target, str):
        return node.target
    module = {"_operator": "operator"}.get(node.target.__module__, node.target.__module__)
    return f"{module}.{node.target.__name__}"


def close(a, b) -> bool:
    """输出相等：张量在其 dtype 的容差内相等，容器逐项相等。"""
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype):
            return False
        return a.dtype == torch.bool or torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    for kind in (tuple, list):
        if isinstance(a, kind):
            return isinstance(b, kind) and len(a) == len(b) and all(map(close, a, b))
    return a == b


def check_starts_empty(timings) -> None:
    """timings：一个新的 TimingInterpreter 在任何运行之前的 timings。"""
    assert timings == {}, f"新建的 TimingInterpreter 的 timings 应为空，而不是 {timings}"


def check_outputs(outputs: list, expected, what: str) -> None:
    """outputs：每次运行的返回值；expected：模块（`what`）的返回值。"""
    same = all(close(expected, output) for output in outputs)
    assert same, f"run(x) 必须返回 {what} 返回的东西"


def timed_names(gm: torch.fx.GraphModule) -> list[str]:
    return [node.name for node in gm.graph.nodes if node.op in TIMED_OPS]


def is_seconds(value) -> bool:
    """计时器给出的时间：一个实数（float、NumPy 的 float64、int），有限且 >= 0。"""
    real = isinstance(value, (int, float)) and not isinstance(value, bool)
    return real and math.isfinite(value) and value >= 0


def times_problem(name: str, times, calls: int) -> str | None:
    """`calls` 次运行之后，一个节点的时间列表有什么问题，以该怎么改的方式说出来。"""
    if not isinstance(times, list):
        return f"timings[{name!r}] 应是时间的列表，每次运行一个，而不是 {times!r}"
    if len(times) != calls:
        return (
            f"{name}：{calls} 次运行之后有 {len(times)} 个时间：请在 run_node 中每次运行追加一个时间（并让每个解释器从空的 timings 开始）"
        )
    wrong = [t for t in times if not is_seconds(t)]
    if wrong:
        return (
            f"{name}：每个时间都是一个节点所用的秒数（之后的 time.perf_counter() 减去之前的，>= 0），而不是 {wrong[0]!r}"
        )
    slow = [t for t in times if t > MOST_SECONDS]
    if slow:
        return (
            f"{name}：小模型的一个节点用了 {slow[0]!r}：这是秒（time.perf_counter()），还是纳秒（time.perf_counter_ns()）？"
        )
    return None


def check_timed(timings, gm: torch.fx.GraphModule, calls: int) -> None:
    """在 gm 上运行 `calls` 次之后的 timings：op 属于 TIMED_OPS 的每个节点每次运行有一个时间，其他节点都没有。"""
    want = sorted(timed_names(gm))
    assert isinstance(timings, dict), f"timings 应是字典，而不是 {type(timings).__name__}"
    odd = sorted({type(key).__name__ for key in timings if not isinstance(key, str)})
    assert not odd, f"timings 的键是 {odd[0]} 对象：请用 node.name（一个 str）作键"
    got = sorted(timings, key=str)
    assert got == want, f"被计时的节点应为 {want}，而不是 {got}"
    for name, times in timings.items():
        problem = times_problem(name, times, calls)
        assert problem is None, problem


def check_times_per_run(timings, gm: torch.fx.GraphModule, calls: int) -> None:
    """在 gm 上运行 `calls` 次之后的 timings：op 属于 TIMED_OPS 的每个节点都有 `calls` 个时间。"""
    assert isinstance(timings, dict), f"timings 应是字典，而不是 {type(timings).__name__}"
    for name in timed_names(gm):
        times = timings.get(name)
        ok = isinstance(times, list) and len(times) == calls
        assert ok, f"{name}：{calls} 次运行之后应有 {calls} 个时间，实际得到 {times}"


def check_summary(rows, timings: dict, gm: torch.fx.GraphModule) -> list:
    """rows（summary() 的结果）为 timings 中的每个节点各有一行格式正确的记录，最慢的在前。"""
    nodes = {node.name: node for node in gm.graph.nodes}
    assert isinstance(rows, list), f"summary() 应返回列表，而不是 {type(rows).__name__}"
    keys = {"name", "op", "target", "calls", "mean_s", "percent"}
    for row in rows:
        assert isinstance(row, dict), f"每一行都应是字典，而不是 {type(row).__name__}：{row}"
        assert set(row) == keys, f"每一行的键必须是 {sorted(keys)}，而不是 {sorted(row, key=str)}"
    names = [row["name"] for row in rows]
    assert sorted(names, key=str) == sorted(timings, key=str), "每个被计时的节点一行"
    totals = [sum(timings[row["name"]]) for row in rows]
    for row, total in zip(rows, totals, strict=True):
        node, calls = nodes[row["name"]], len(timings[row["name"]])
        wanted = (node.op, target_text(node))
        assert (row["op"], row["target"]) == wanted, (
            f"{row['name']}：op 和 target 应为 {wanted}（target 由 target_text(node) 给出），而不是 {(row['op'], row['target'])}"
        )
        whole = isinstance(row["calls"], int) and not isinstance(row["calls"], bool)
        assert whole and row["calls"] == calls, (
            f"{row['name']}：calls 应为整数 {calls}，而不是 {row['calls']!r}"
        )
        for key in ("mean_s", "percent"):
            assert isinstance(row[key], float), (
                f"{row['name']}：{key} 应为浮点数（float），而不是 {type(row[key]).__name__}"
            )
        assert math.isclose(row["mean_s"], total / calls), f"{row['name']}：mean_s 应为 total / calls"
        share = 100 * total / sum(totals)
        assert math.isclose(row["percent"], share), (
            f"{row['name']}：percent 是 {row['percent']!r}；100 * 它的总时间 / 所有总时间之和是 {share!r}（不取整）"
        )
    assert totals == sorted(totals, reverse=True), "各行按总时间排序，最慢的在前"
    return rows


def nap(x):
    """睡眠 NAP_SECONDS 之后返回 x：一个墙钟时间已知、几乎不花 CPU 时间的节点。"""
    time.sleep(NAP_SECONDS)
    return x


torch.fx.wrap("nap")  # 追踪后是一个 call_function 节点，运行时会睡眠


class Napping(nn.Module):
    """先 relu，再 nap：一个含一个睡眠节点的模型。"""

    def forward(self, x):
        return nap(torch.relu(x))


def check_wall_seconds(timings) -> None:
    """追踪后的 Napping 运行一次之后的 timings：nap 的时间就是它睡眠的秒数，或稍多一点。"""
    times = timings.get("nap") if isinstance(timings, dict) else None
    assert isinstance(times, list) and times, f"timings['nap'] 应是时间的列表，而不是 {times}"
    short = [t for t in times if is_seconds(t) and t < NAP_SECONDS]
    assert not short, (
        f"nap 睡眠 {NAP_SECONDS} 秒，它的时间却是 {short[0]!r}：这是墙钟时间（time.perf_counter()），还是睡眠时并不花费的 CPU 时间（time.process_time()）？"
    )
    long = [t for t in times if is_seconds(t) and t > 1]
    assert not long, (
        f"nap 睡眠 {NAP_SECONDS} 秒，它的时间却是 {long[0]!r}：这是秒，还是毫秒？"
    )


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
