"""graph_data.build on hostile descriptions: a learner's description is a claim, never code.

Every case here once ran the learner's text in the grader, or could: a placeholder's default or
name, a module path, a keyword's name or a getattr's attribute spliced into the code torch.fx
generates; a module path that walks into GraphModule itself; sizes that make the builder work for
minutes. Each must end as a DataError, before anything is built, with nothing run or changed.
"""

from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.fx
import torch.nn as nn

from grader.safegrade import graph_data
from grader.safegrade.data import DataError, Opaque, Ref
from grader.safegrade.kernel import crossed

MARK = "__import__('os').system('touch /tmp/pwned-by-a-description')"
# What Model's graph uses, declared as an exercise declares its graphs' vocabulary (probes.py).
VOCABULARY = graph_data.Vocabulary(
    functions=(operator.add, operator.mul, torch.cat),
    methods=("sigmoid",),
    modules={nn.Linear: graph_data.linear_arguments, nn.ReLU: None},
)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.seq = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.ReLU()))
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x, y=1.5):
        h = self.seq(self.lin(x)) * self.scale
        return torch.cat([h.sigmoid(), h[:, :1] + y], dim=1)


@pytest.fixture
def sent() -> dict:
    """The description of a traced model, as it arrives on the trusted side."""
    return crossed(VOCABULARY.describe(torch.fx.symbolic_trace(Model()), state=True))


def node(description: dict, op: str) -> dict:
    return next(row for row in description["nodes"] if row["op"] == op)


def test_an_honest_description_is_rebuilt_and_runs_without_compiling_code(sent, monkeypatch):
    def no_compiling(*args, **kwargs):
        raise AssertionError("the trusted side compiled code from a description")

    want = torch.fx.symbolic_trace(Model())
    monkeypatch.setattr(torch.fx.graph_module, "_forward_from_src", no_compiling)
    gm = VOCABULARY.build(sent)
    want.load_state_dict(gm.state_dict())
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(gm(x), want(x))
    assert isinstance(gm, graph_data.DescribedGraphModule) and "def forward" in gm.code
    assert isinstance(copy.copy(gm), graph_data.DescribedGraphModule)
    assert isinstance(copy.deepcopy(gm), graph_data.DescribedGraphModule)


def test_a_description_made_on_the_trusted_side_is_rebuilt_as_it_is():
    """checks.py builds its own descriptions without a crossing (torch.fx's immutable lists
    and dicts in them)."""
    traced = torch.fx.symbolic_trace(Model())
    gm = VOCABULARY.build(VOCABULARY.describe(traced, state=True))
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(gm(x), traced(x))


def test_a_probe_gets_an_ordinary_graph_module(sent):
    gm = VOCABULARY.build(sent, codegen=True)
    assert not isinstance(gm, graph_data.DescribedGraphModule)
    assert gm(torch.randn(2, 3)).shape == (2, 4)


def hostile_cases() -> dict[str, callable]:
    """name -> a change that makes a description hostile."""

    def set_in(op, key, value):
        def change(d):
            node(d, op)[key] = value

        return change

    def module_path(path):
        def change(d):
            row = node(d, "call_module")
            d["modules"][path] = d["modules"][row["target"]]
            row["target"] = path

        return change

    def add_node(row):
        def change(d):
            d["nodes"].insert(-1, row)

        return change

    getattr_name = graph_data.target_name(getattr)  # as describe names it: an allowed function
    getattr_row = {"name": "g", "op": "call_function", "target": getattr_name, "users": []}
    return {
        "placeholder default that is code": set_in("placeholder", "args", (Opaque("x", MARK),)),
        "placeholder name that adds a parameter": set_in("placeholder", "target", f"y, z={MARK}"),
        "node name that is code": set_in("call_module", "name", f"a = {MARK}"),
        "node name that is a keyword": set_in("call_module", "name", "class"),
        "module path that closes getattr": module_path(f'lin")\n    {MARK}\n    ("'),
        "module path into GraphModule's class": module_path("__class__.__base__.__call__"),
        "module path into the graph object": module_path("graph.owning_module"),
        "module path named forward": module_path("forward"),
        "module path of 3.4 MB": module_path("a" * 3_400_000),
        "module path of a million parts": module_path(".".join(["m"] * 1_000_000)),
        "module path nine deep": module_path(".".join("abcdefghi")),
        "tensor path with an underscore": set_in("get_attr", "target", "_buffers"),
        "keyword argument name that is code": set_in("call_function", "kwargs", {MARK: 1}),
        "getattr of a dunder": add_node(getattr_row | {"args": (Ref(0), "__class__")}),
        "getattr of an attribute named by a node": add_node(
            getattr_row | {"args": (Ref(0), Ref(0))}
        ),
        "constant of an unknown type": set_in("call_function", "args", (Ref(0), Opaque("t", MARK))),
        "tensor constant": set_in("call_function", "args", (Ref(0), torch.ones(2))),
        "constants nested 11 deep": set_in(
            "call_function", "args", (Ref(0), [[[[[[[[[[1]]]]]]]]]] * 2)
        ),
        "30,000 constants": set_in("call_function", "args", (Ref(0), list(range(30_000)))),
        "string constant of 5,000 characters": set_in(
            "call_function", "args", (Ref(0), "s" * 5000)
        ),
        "dict key of an unknown type": set_in(
            "call_function", "kwargs", {"dim": {Opaque("k", "k"): 1}}
        ),
        "output target that is not output": set_in("output", "target", MARK),
        "two outputs": set_in("output", "args", (Ref(0), Ref(0))),
        "method that is not allowed": set_in("call_method", "target", "__reduce_ex__"),
        "function that is not allowed": set_in("call_function", "target", "os.system"),
        "function named by a list": set_in("call_function", "target", ["torch.cat"]),
        "module type that is not allowed": set_in("call_module", "module", "os.system"),
        "module type named by a dict": set_in("call_module", "module", {"a": 1}),
        "unknown op": set_in("call_function", "op", "exec"),
        "two placeholders with one name": add_node(
            {"name": "x2", "op": "placeholder", "target": "x"}
        ),
        "a reference to a later node": set_in("call_function", "args", (Ref(40),)),
        "args that are not a list": set_in("call_function", "args", {"a": 1}),
        "a node that is not a dict": lambda d: d["nodes"].insert(1, "x"),
        "501 nodes": lambda d: d["nodes"].extend([d["nodes"][0]] * 501),
    }


HOSTILE = hostile_cases()


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_description_is_refused_before_anything_is_built(case, sent, monkeypatch):
    built = []
    for owner, name in ((torch.fx, "GraphModule"), (graph_data, "DescribedGraphModule")):
        monkeypatch.setattr(owner, name, lambda *args: built.append(args))
    before = dict(vars(torch.fx.graph_module.GraphModule))
    description = copy.deepcopy(sent)
    HOSTILE[case](description)
    with pytest.raises(DataError):
        VOCABULARY.build(description, sent)
    assert built == [] and dict(vars(torch.fx.graph_module.GraphModule)) == before


def test_a_path_through_a_module_or_tensor_is_refused(sent):
    description = copy.deepcopy(sent)
    description["nodes"].insert(1, {"name": "w", "op": "get_attr", "target": "lin.weight"})
    with pytest.raises(DataError, match="lin"):
        VOCABULARY.build(
            description, sent | {"attrs": sent["attrs"] | {"lin.weight": torch.ones(1)}}
        )


def test_typed_constants_become_plain_values():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.mul, (x, 3)))
    description = crossed(VOCABULARY.describe(torch.fx.GraphModule(nn.Module(), graph)))
    description["nodes"][1]["args"] = (Ref(0), type("Three", (int,), {})(3))
    gm = VOCABULARY.build(description)
    assert type(list(gm.graph.nodes)[1].args[1]) is int


def test_a_getattr_of_a_public_name_is_rebuilt(sent):
    """getattr is an allowed function: the hostile getattr cases above are refused for the
    attribute they name, not for calling getattr."""
    description = copy.deepcopy(sent)
    row = {"name": "g", "op": "call_function", "target": graph_data.target_name(getattr)}
    description["nodes"].insert(-1, row | {"args": (Ref(0), "T"), "kwargs": {}, "users": []})
    gm = VOCABULARY.build(description, sent)
    assert [n.args[1] for n in gm.graph.nodes if n.target is getattr] == ["T"]


# ----------------------------------------------------------------------------- the vocabulary


def test_only_what_the_exercise_declared_is_named_and_rebuilt(sent):
    """torch.sigmoid is in no vocabulary here: described, it is named as not allowed, and a
    description that names it as another exercise's vocabulary would is refused."""
    graph = torch.fx.symbolic_trace(lambda x: torch.sigmoid(x) + 1)
    described = crossed(VOCABULARY.describe(graph))
    assert node(described, "call_function")["target"] == "<not allowed: torch.sigmoid>"
    node(described, "call_function")["target"] = "torch.sigmoid"
    with pytest.raises(DataError, match="never runs"):
        VOCABULARY.build(described)
    with_sigmoid = graph_data.Vocabulary(functions=(torch.sigmoid, operator.add))
    assert with_sigmoid.build(described)(torch.zeros(1)).item() == 1.5


def test_the_vocabulary_is_captured_when_it_is_made(monkeypatch):
    """Rebinding torch.cat after the vocabulary was made (as a learner's cell may) changes
    neither how a graph's target is named nor what a rebuilt graph calls."""
    genuine = torch.cat
    graph = torch.fx.symbolic_trace(lambda x: torch.cat([x, x]))
    monkeypatch.setattr(torch, "cat", lambda tensors, dim=0: tensors[0])
    described = crossed(VOCABULARY.describe(graph))
    assert node(described, "call_function")["target"] == "torch.cat"
    rebuilt = VOCABULARY.build(described)
    assert [n.target for n in rebuilt.graph.nodes if n.op == "call_function"] == [genuine]


class Sleeper(nn.Module):
    """A module type an exercise defines itself, made with an argument."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds

    def forward(self, x):
        return x * self.seconds


class KeepsSleepers(torch.fx.Tracer):
    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, Sleeper) or super().is_leaf_module(module, qualified_name)


def test_a_module_made_with_arguments_is_rebuilt_only_as_the_grader_made_it():
    local = graph_data.Vocabulary(
        functions=(operator.mul,),
        modules={Sleeper: lambda module: (module.seconds,)},
        local=(Sleeper,),
    )
    root = nn.Sequential(Sleeper(0.25))
    traced = torch.fx.GraphModule(root, KeepsSleepers().trace(root))
    sent = crossed(local.describe(traced, state=True))
    assert sent["modules"]["0"] == {"type": "exercise.Sleeper", "state": {}, "arguments": [0.25]}
    assert local.build(sent)(torch.ones(1)).item() == 0.25
    claimed = copy.deepcopy(sent)
    del claimed["modules"]
    with pytest.raises(DataError, match="did not make"):  # a new one, with arguments of its own
        local.build(claimed)
    for arguments in ([Opaque("t", MARK)], [0.1, 0.2]):
        hostile = copy.deepcopy(sent)
        hostile["modules"]["0"]["arguments"] = arguments
        with pytest.raises(DataError):
            local.build(hostile)


def test_a_linear_whose_arguments_and_weights_disagree_is_refused(sent):
    hostile = copy.deepcopy(sent)
    hostile["modules"]["lin"]["arguments"] = [5, 5, True]
    with pytest.raises(DataError, match="cannot be made"):
        VOCABULARY.build(hostile)


def test_two_things_of_one_name_make_no_vocabulary():
    def nap(x):
        return x

    def other(x):
        return x

    other.__name__, other.__qualname__ = nap.__name__, nap.__qualname__
    with pytest.raises(ValueError, match="one name"):
        graph_data.Vocabulary(functions=(nap, other), local=(nap, other))
