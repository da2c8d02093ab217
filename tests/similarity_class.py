"""A made-up class for `make similarity`: per exercise, 20 honest answers and 3 planted copies.

Honest answers are assembled from independent choices, as learners make them: each exercise's
answer has four steps and each step three ways to write it (written here, each a plausible way a
learner would solve that step). The 20 answers are 20 of the 27 choices (a, b, c, d) with
d = -(a + b + c) mod 3, so any two honest answers differ in at least two of the four steps: honest
learners share ways of writing a step, as real ones do, but never a whole answer. A planted copy
is a classmate's honest answer with its variables renamed, its steps (helpers) reordered and
comments added.
"""

from __future__ import annotations

import itertools
import re

# ex1: replace_sigmoid_with_tanh(gm). Steps: functions, methods, modules, finishing.
EX1_STEPS = [
    [
        """    swaps = dict.fromkeys([torch.sigmoid, F.sigmoid, torch.special.expit], torch.tanh)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in swaps:
            node.target = swaps[node.target]
""",
        """    sigmoid_functions = [torch.sigmoid, torch.nn.functional.sigmoid, torch.special.expit]
    for fn in sigmoid_functions:
        for found in gm.graph.find_nodes(op="call_function", target=fn):
            found.target = torch.tanh
""",
        """    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    i = 0
    while i < len(calls):
        if calls[i].target is torch.sigmoid or calls[i].target is F.sigmoid:
            calls[i].target = torch.tanh
        elif calls[i].target is torch.special.expit:
            calls[i].target = torch.tanh
        i += 1
""",
    ],
    [
        """    renames = {"sigmoid": "tanh", "sigmoid_": "tanh_"}
    for node in gm.graph.nodes:
        if node.op == "call_method" and node.target in renames:
            node.target = renames[node.target]
""",
        """    for m in [n for n in gm.graph.nodes if n.op == "call_method"]:
        if m.target.startswith("sigmoid"):
            m.target = m.target.replace("sigmoid", "tanh", 1)
""",
        """    def method_fix(n):
        if n.target == "sigmoid":
            return "tanh"
        if n.target == "sigmoid_":
            return "tanh_"
        return n.target

    for n in list(gm.graph.nodes):
        if n.op == "call_method":
            n.target = method_fix(n)
""",
    ],
    [
        """    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            owner, _, attr = node.target.rpartition(".")
            setattr(gm.get_submodule(owner), attr, nn.Tanh())
""",
        """    to_swap = [name for name, mod in gm.named_modules() if type(mod) is torch.nn.Sigmoid]
    for qualified in to_swap:
        path = qualified.split(".")
        parent = gm
        for piece in path[:-1]:
            parent = getattr(parent, piece)
        parent._modules[path[-1]] = torch.nn.Tanh()
""",
        """    def swap_children(module):
        for child_name, child in module.named_children():
            if isinstance(child, nn.Sigmoid):
                module.add_module(child_name, nn.Tanh())
            else:
                swap_children(child)

    swap_children(gm)
""",
    ],
    [
        """    gm.graph.lint()
    gm.recompile()
    return gm
""",
        """    gm.recompile()
    gm.delete_all_unused_submodules()
    return gm
""",
        """    result = torch.fx.GraphModule(gm, gm.graph)
    result.graph.eliminate_dead_code()
    result.recompile()
    return result
""",
    ],
]
EX1_HEAD = "def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:\n"

# ex2: dump_nodes(gm) and merge(gm, a, b). Steps: target text, args, users/refers_to, merge.
EX2_STEPS = [
    [
        """    def target_text(target):
        if isinstance(target, str):
            return target
        module = {"_operator": "operator"}.get(target.__module__, target.__module__)
        return f"{module}.{target.__name__}"
""",
        """    def target_text(t):
        if type(t) is str:
            return t
        where = t.__module__
        if where == "_operator":
            where = "operator"
        return where + "." + t.__name__
""",
        """    import operator as op_module

    def target_text(thing):
        if callable(thing):
            home = thing.__module__
            if getattr(op_module, thing.__name__, None) is thing:
                home = "operator"
            return "%s.%s" % (home, thing.__name__)
        return str(thing)
""",
    ],
    [
        """    def arg_names(value):
        return torch.fx.node.map_arg(value, lambda n: n.name)
""",
        """    def arg_names(value):
        if isinstance(value, torch.fx.Node):
            return value.name
        if isinstance(value, (list, tuple)):
            return type(value)(arg_names(v) for v in value)
        if isinstance(value, dict):
            return {k: arg_names(v) for k, v in value.items()}
        return value
""",
        """    from torch.fx.node import map_aggregate

    def arg_names(value):
        return map_aggregate(value, lambda x: x.name if isinstance(x, torch.fx.Node) else x)
""",
    ],
    [
        """    order = {node: i for i, node in enumerate(gm.graph.nodes)}

    def about(node):
        if node.op == "call_module":
            return type(gm.get_submodule(node.target)).__name__
        if node.op == "get_attr":
            value = gm
            for part in node.target.split("."):
                value = getattr(value, part)
            return (value.dtype, tuple(value.shape))
        return None

    def users_of(node):
        return [u.name for u in sorted(node.users, key=order.get)]
""",
        """    everything = list(gm.graph.nodes)

    def users_of(node):
        return [other.name for other in everything if node in other.all_input_nodes]

    def about(node):
        if node.op == "get_attr":
            tensor = gm.get_parameter(node.target) if "weight" in node.target else None
            if tensor is None:
                tensor = getattr(gm, node.target)
            return (tensor.dtype, tuple(tensor.shape))
        return type(gm.get_submodule(node.target)).__name__ if node.op == "call_module" else None
""",
        """    positions = {}
    for index, node in enumerate(gm.graph.nodes):
        positions[node.name] = index

    def users_of(node):
        names = [user.name for user in node.users]
        names.sort(key=lambda name: positions[name])
        return names

    def about(node):
        kind = node.op
        if kind not in ("call_module", "get_attr"):
            return None
        if kind == "call_module":
            return type(gm.get_submodule(node.target)).__name__
        thing = gm.get_buffer(node.target)
        return (thing.dtype, tuple(thing.shape))
""",
    ],
    [
        """def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    nodes = list(gm.graph.nodes)
    keep, drop = sorted((node for node in nodes if node.name in (a, b)), key=nodes.index)
    drop.replace_all_uses_with(keep)
    gm.graph.erase_node(drop)
    gm.recompile()
    return gm
""",
        """def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    first = second = None
    for node in gm.graph.nodes:
        if node.name in (a, b):
            if first is None:
                first = node
            else:
                second = node
    second.replace_all_uses_with(first)
    gm.graph.erase_node(second)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
        """def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    by_name = {n.name: n for n in gm.graph.nodes}
    index = {n: i for i, n in enumerate(gm.graph.nodes)}
    x, y = by_name[a], by_name[b]
    if index[y] < index[x]:
        x, y = y, x
    for user in list(y.users):
        user.replace_input_with(y, x)
    gm.graph.erase_node(y)
    gm.recompile()
    return gm
""",
    ],
]
EX2_HEAD = "def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:\n"
EX2_RETURN = """    return [
        {"name": n.name, "op": n.op, "target": target_text(n.target), "args": arg_names(n.args),
         "kwargs": arg_names(n.kwargs), "users": users_of(n), "refers_to": about(n)}
        for n in gm.graph.nodes
    ]
"""

# ex3: TimingInterpreter. Steps: storage, run_node, collecting the summary, ordering/percent.
EX3_STEPS = [
    [
        """    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self.timings: dict[str, list[float]] = {}
""",
        """    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        from collections import defaultdict

        self.timings = defaultdict(list)
""",
        """    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self.timings = {}
        self.call_counts = {}
""",
    ],
    [
        """    def run_node(self, n: torch.fx.Node):
        if n.op not in TIMED_OPS:
            return super().run_node(n)
        start = time.perf_counter()
        value = super().run_node(n)
        self.timings.setdefault(n.name, []).append(time.perf_counter() - start)
        return value
""",
        """    def run_node(self, n: torch.fx.Node):
        timed = n.op in TIMED_OPS
        begin = time.perf_counter_ns()
        try:
            return super().run_node(n)
        finally:
            if timed:
                elapsed = (time.perf_counter_ns() - begin) / 1e9
                self.timings.setdefault(n.name, []).append(elapsed)
""",
        """    def run_node(self, n: torch.fx.Node):
        if n.op in ("placeholder", "output", "get_attr"):
            return super().run_node(n)
        t0 = time.monotonic()
        out = super().run_node(n)
        t1 = time.monotonic()
        if n.name not in self.timings:
            self.timings[n.name] = []
        self.timings[n.name].append(t1 - t0)
        return out
""",
    ],
    [
        """    def _rows(self):
        by_name = {node.name: node for node in self.graph.nodes}
        return [
            {"name": name, "op": by_name[name].op, "target": target_text(by_name[name]),
             "calls": len(times), "mean_s": sum(times) / len(times), "total": sum(times)}
            for name, times in self.timings.items()
        ]
""",
        """    def _rows(self):
        rows = []
        for node in self.graph.nodes:
            times = self.timings.get(node.name)
            if not times:
                continue
            row = {"name": node.name, "op": node.op, "target": target_text(node)}
            row["calls"] = len(times)
            row["total"] = sum(times)
            row["mean_s"] = row["total"] / row["calls"]
            rows.append(row)
        return rows
""",
        """    def _one_row(self, node, times):
        total = 0.0
        for t in times:
            total += t
        return dict(name=node.name, op=node.op, target=target_text(node), calls=len(times),
                    mean_s=total / max(len(times), 1), total=total)

    def _rows(self):
        nodes = list(self.graph.nodes)
        return [self._one_row(x, self.timings[x.name]) for x in nodes if x.name in self.timings]
""",
    ],
    [
        """    def summary(self) -> list[dict]:
        rows = self._rows()
        grand = sum(row["total"] for row in rows) or 1.0
        for row in rows:
            row["percent"] = 100.0 * row.pop("total") / grand
        return sorted(rows, key=lambda row: row["percent"], reverse=True)
""",
        """    def summary(self) -> list[dict]:
        rows = sorted(self._rows(), key=lambda r: -r["total"])
        everything = sum(r["total"] for r in rows)
        result = []
        for r in rows:
            share = r.pop("total") / everything * 100 if everything else 0.0
            result.append({**r, "percent": share})
        return result
""",
        """    def summary(self) -> list[dict]:
        import heapq

        rows = self._rows()
        total_time = math.fsum(r["total"] for r in rows)
        top = heapq.nlargest(len(rows), rows, key=lambda r: r["total"])
        for r in top:
            r["percent"] = (r.pop("total") * 100.0 / total_time) if total_time > 0 else 0.0
        return top
""",
    ],
]
EX3_HEAD = "class TimingInterpreter(torch.fx.Interpreter):\n"


def honest_choices(count: int = 20) -> list[tuple[int, int, int, int]]:
    """`count` choices, any two differing in at least two of the four steps."""
    codes = [(a, b, c, (-(a + b + c)) % 3) for a, b, c in itertools.product(range(3), repeat=3)]
    return codes[:count]


def answer(assignment: str, choice: tuple[int, ...], order: tuple[int, ...] = (0, 1, 2, 3)) -> str:
    """The answer cell's code for one choice of ways, with its steps in `order`."""
    if assignment == "ex1_sigmoid_to_tanh":
        parts = [EX1_STEPS[step][choice[step]] for step in order[:3] if step < 3]
        return EX1_HEAD + "".join(parts) + EX1_STEPS[3][choice[3]]
    if assignment == "ex2_node_dump":
        helpers = [EX2_STEPS[step][choice[step]] for step in order if step < 3]
        return EX2_HEAD + "".join(helpers) + EX2_RETURN + "\n\n" + EX2_STEPS[3][choice[3]]
    methods = [EX3_STEPS[step][choice[step]] for step in order]
    return EX3_HEAD + "\n".join(methods)


PLANTED_RENAMES = {
    "node": "nd",
    "n": "item",
    "gm": "module_in",
    "times": "durations",
    "rows": "table",
    "row": "entry",
    "value": "val",
    "users_of": "who_uses",
    "about": "describe",
    "arg_names": "names_in",
    "target_text": "as_text",
    "first": "earlier",
    "second": "later",
    "nodes": "all_nodes",
}


def planted_copy(code: str) -> str:
    """A classmate's answer disguised: names changed (not the library's attributes), comments
    added above every block."""

    def rename(match: re.Match) -> str:
        word = match.group(0)
        before = code[match.start() - 1] if match.start() else ""
        return word if before == "." else PLANTED_RENAMES.get(word, word)

    renamed = re.sub(r"\b[A-Za-z_]\w*\b", rename, code)
    lines = []
    for line in renamed.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(("for ", "if ", "def ", "return")):
            indent = line[: len(line) - len(stripped)]
            lines.append(f"{indent}# {stripped.split()[0]}: my own step here")
        lines.append(line)
    return "\n".join(lines)


# Which honest answers are copied, and in which step order the copy has them.
PLANTED = [(3, (2, 0, 1, 3)), (11, (1, 2, 0, 3)), (17, (0, 2, 1, 3))]


def class_answers(assignment: str) -> dict[str, str]:
    """student -> answer code: 20 honest learners and 3 who copied (copier_of_<student>)."""
    answers = {
        f"learner{i:02d}": answer(assignment, choice) for i, choice in enumerate(honest_choices())
    }
    for source, order in PLANTED:
        choice = honest_choices()[source]
        answers[f"copier_of_learner{source:02d}"] = planted_copy(answer(assignment, choice, order))
    return answers
