"""What chapter 7's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(masked_inputs):              # try it 7.1: (tokens, mask)
        mine, wanted = case.both(run_program)
    promised_ranges(program)                             # 7.1: the sizes a program accepts
    for case in check.cases(row_picks):                  # try it 7.2: (x, row)
        mine, wanted = case.both(pick)
    cases = list(check.cases(stateful_models, count=5))  # try it 7.3: (model, x)
    joined, program = joined_program(cases)              # 7.3, 7.7: one program for all
    mine, wanted = check.both(written_by, program)       # 7.3: each side lowers it once
    for case in check.cases(windows):                    # try it 7.4: (k, x)
        mine, wanted = case.both(exported_window)
    for case in check.cases(module_trees, count=5):      # try it 7.5: (model, x, paths)
    package_cases(folder, program, package, model)       # try it 7.6: a case builder
    layer_stacks, lowered_summary, operators_of          # try it 7.7

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each). Chapter 7's later checkpoints (7.5 to 7.7) are in export_cases_late.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import logging
import random
import sys
from unittest import mock

import torch
from torch import nn
from torch._export import utils as export_utils  # private
from torch.export import Dim

from fxcourse.capture import torch_logs
from fxcourse.cases import case_of, side_by_side
from fxcourse.messages import _
from fxcourse.quiet import hushed

# ----------------------------------------------------------------------------- try it 7.1


def masked_inputs(make):
    """Batches and lengths of 1 and larger (each in every run), masks of zeros and ones."""
    one = make.each(["batch", "length", "neither"])  # which size is 1
    batch = 1 if one == "batch" else make.integer(2, 40)
    length = 1 if one == "length" else make.integer(2, 9 if one == "batch" else 40)
    make.note(_("batch {rows}, length {length}").format(rows=batch, length=length))
    tokens = make.tensor(batch, length, 4)
    return tokens, (make.tensor(batch, length) > 0).float()


def run_program(answer, tokens: torch.Tensor, mask: torch.Tensor):
    """The answer's program run on the inputs, passed as its example was (positionally, or by
    keyword: a program exported from kwargs takes its inputs by name), or its refusal's first
    line."""
    program = answer.masked_exported
    positional = len((program.example_inputs or ((tokens, mask), {}))[0])
    given = {"tokens": tokens, "mask": mask}
    named = dict(list(given.items())[positional:])
    try:
        return program.module()(*list(given.values())[:positional], **named)
    except Exception as error:  # noqa: BLE001 - the program checks the inputs' shapes
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"


def promised_ranges(program: torch.export.ExportedProgram, name: str = "tokens") -> list:
    """Per dimension of the input `name`, the range of sizes the program promises to accept
    (its range_constraints), or None for a size fixed at export."""
    (node,) = [n for n in program.graph.find_nodes(op="placeholder") if n.name == name]
    sizes = node.meta["val"].shape
    return [
        program.range_constraints[size.node.expr] if isinstance(size, torch.SymInt) else None
        for size in sizes
    ]


def every_size_from_one(sizes) -> bool:
    """Whether a promised range (an entry of promised_ranges) holds 1 and every larger size: its
    upper end is int_oo, above any int64 size (a bound, however large, is not every size)."""
    return sizes is not None and sizes.lower <= 1 and sizes.upper > sys.maxsize


# ----------------------------------------------------------------------------- try it 7.2


ROW_COUNTS = {  # a table's rows by the kind of row asked: a constant bound fails somewhere
    "last": (7, 12),  # rows 6 to 11 exist here, while rows 2 to 7 are past the end of
    "first past the end": (2, 5),  # the small tables below (the example's 5 rows among them)
    "past the end": (2, 5),
}


def row_picks(make):
    """Tables of drawn lengths; in every run of six, the first row, the last row, the first past
    the end, one further past, row -1, and one further below (a bound off by one, either way, at
    either end, refuses a row x has or accepts one it lacks in every run; so does a check that
    refuses -1 alone, `row != -1`). The last row asked lies past the end of the tables asked
    about rows past their end, so a bound written as a number (the example's 5 rows, any other)
    fails in every run too."""
    kinds = ["first", "last", "first past the end", "past the end", "minus one", "negative"]
    where = make.each(kinds)
    rows = make.integer(*ROW_COUNTS.get(where, (2, 12)))
    row = {
        "first": 0,
        "last": rows - 1,
        "first past the end": rows,
        "past the end": rows + make.integer(1, 2),
        "minus one": -1,  # unchecked, the last row
        "negative": -make.integer(2, rows),  # unchecked, a row counted from the end, or none
    }[where]
    make.note(_("row {row} of a {rows}-row x").format(row=row, rows=rows))
    return make.tensor(rows, 2), torch.tensor(row)  # 2 columns, as in the chapter's export


CHECK_FAILED = "Runtime assertion failed"  # torch's words when a check of the program fails
_programs: dict = {}  # one export per answer class: each case calls its module with another table


def pick(answer, table: torch.Tensor, row: torch.Tensor):
    """The answer's PickRowChecked, exported with any number of rows, run on (table, row):
    its output, "refused" (by a check of the program), ("refused unchecked", the error) when
    something else raised, or ("export failed", the error's first line, whether export made
    the number of rows a constant: `len(x)` does, redJ3)."""
    model = answer.PickRowChecked
    if model not in _programs:
        any_rows = {"x": {0: Dim("rows")}, "i": None}
        example = (torch.randn(5, 2), torch.tensor(1))
        try:
            with torch_logs(), contextlib.redirect_stderr(io.StringIO()):
                program = torch.export.export(model(), example, dynamic_shapes=any_rows)
            _programs[model] = program.module()  # made once: it keeps no state between calls
        except Exception as error:  # noqa: BLE001 - export could not capture the model
            said = str(error)  # torch's words, in pieces: a Chinese page may print them whole
            fixed = "specialized it" in said and "be a constant" in said
            _programs[model] = (f"{type(error).__name__}: {str(error).splitlines()[0]}", fixed)
    if isinstance(_programs[model], tuple):
        return ("export failed", *_programs[model])
    try:
        return _programs[model](table, row)
    except Exception as error:  # noqa: BLE001 - an error refuses the row; whose error?
        if CHECK_FAILED in str(error):  # an assertion export made of a torch._check
            return "refused"
        return ("refused unchecked", f"{type(error).__name__}: {str(error).splitlines()[0]}")


# ----------------------------------------------------------------------------- try it 7.3

ARGUMENTS = ("x", "tokens", "features", "inputs", "batch", "values")


def writer_model(
    make,
    buffers: list[str],
    written: list[str],
    argument: str | None,
    kept: str | None = None,
    loose: str | None = None,
):
    """A model with the buffers `buffers`; forward adds to those in `written` and, when
    `argument` is given, multiplies its input (named `argument`) in place. The buffer `kept`
    (the first, when given) is written too, as a running minimum that starts far below any
    input: the write leaves its values as they were (running the model shows no change). The
    buffer `loose` is registered with persistent=False: a buffer still, but out of the state
    dict (export keeps its value among the program's constants)."""
    name = argument or make.choice(ARGUMENTS)
    body = [f"def forward(self, {name}):", f"    value = {name}"]
    if argument:
        body.insert(1, f"    {name}.mul_(2)")
    for buffer in buffers:
        if buffer == kept:
            body.append(f"    self.{buffer}.copy_(torch.minimum(self.{buffer}, value.min()))")
        elif buffer in written:
            body.append(f"    self.{buffer}.add_(value.mean())")
        body.append(f"    value = value + self.{buffer}")
    body.append("    return value")
    scope: dict = {"torch": torch}
    exec("\n".join(body), scope)  # noqa: S102 - a forward whose argument name is drawn
    model = type(make.word().title(), (nn.Module,), {"forward": scope["forward"]})()
    for buffer in buffers:
        start = make.tensor(3) - (1000.0 if buffer == kept else 0.0)
        model.register_buffer(buffer, start, persistent=buffer != loose)
    return model


def stateful_models(make):
    """Models that write some of their buffers, their input, both, or a norm layer's statistics;
    in every run of five a BatchNorm in training mode, whose aten.batch_norm writes its running
    statistics without a trailing underscore, and one in eval mode, which writes none of its
    buffers (listing a norm layer's buffers whatever its mode is refused), maybe with a
    LayerNorm; names drawn. The model that writes buffers only writes its first one with the
    values it holds: a write all the same, which running the program cannot show; and the last
    buffer it writes is not persistent (out of program.state_dict, a buffer all the same)."""
    kinds = ["buffers and input", "buffers only", "input only", "training batchnorm", "norm"]
    kind = make.each(kinds)
    if kind in ("training batchnorm", "norm"):
        width, training = make.integer(2, 6), kind == "training batchnorm"
        layers = [nn.Linear(3, width), nn.BatchNorm1d(width)]
        layers += [nn.LayerNorm(width)] if not training and make.coin() else []
        model = make.sequential(layers).train(training)
        mode = _("training") if model.training else _("eval")
        make.note(_("{model} in {mode} mode").format(model=model, mode=mode))
        return model, make.tensor(make.integer(2, 4), 3)
    buffers = make.words(make.integer(1, 4))
    written = [b for b in buffers if make.coin()] if kind != "input only" else []
    if kind == "buffers only" and not written:
        written = [make.choice(buffers)]
    argument = make.choice(ARGUMENTS) if kind != "buffers only" else None
    kept = buffers[0] if kind == "buffers only" else None  # a write that changes no value
    written = [*dict.fromkeys([kept, *written])] if kept else written
    loose = written[-1] if kind == "buffers only" else None  # a written buffer, not persistent
    model = writer_model(make, buffers, written, argument, kept, loose)
    make.note(
        _("buffers {names}, of which forward writes {written}, argument {argument}").format(
            names=buffers, written=written, argument=argument
        )
    )
    if kept:
        make.note(
            _("{name} is written with the values it holds (a running minimum)").format(name=kept)
        )
    if loose:
        make.note(_("{name} is registered with persistent=False").format(name=loose))
    return model, make.tensor(make.integer(1, 4), 3)


def joined_program(cases, named: bool = False) -> tuple[nn.Module, torch.export.ExportedProgram]:
    """The cases' models side by side in one module (case1 ... caseN), each with the case's
    input, and its export: run_decompositions costs the same fixed time per program, so each
    side pays it once. `named`: the inputs keep the names the models' forwards give them."""
    drawn = [case.objects() for case in cases]
    names = [next(iter(inspect.signature(m.forward).parameters)) for m, _x in drawn]
    joined = side_by_side([model for model, _x in drawn], names if named else ())
    return joined, torch.export.export(joined, tuple(x for _m, x in drawn))


def of_case(joined: nn.Module, names, number: int | None) -> list:
    """The names (or nodes) among `names` that belong to case `number` of `joined`."""
    return [name for name in names if case_of(joined, name) == number]


def written_by(answer, program: torch.export.ExportedProgram):
    """The answer's written_state(program), its composite operators listed once."""
    with composites_listed_once():
        return answer.written_state(program)


@contextlib.contextmanager
def composites_listed_once():
    """While the block runs, run_decompositions puts the dispatcher's composite operators into
    torch.ops once for each set of registrations, instead of once per operator namespace (some
    fifty times a call, each the same getattr over about a thousand names: a fifth of its
    fixed cost). It finds the same operators: a new registration is put in again."""
    materialize, done = export_utils._materialize_cpp_cia_ops, []

    def once() -> None:
        key = "CompositeImplicitAutograd"
        registered = torch._C._dispatch_get_registrations_for_dispatch_key(key)  # private
        if not done or registered != done[-1]:
            materialize()
            done.append(registered)

    with mock.patch.object(export_utils, "_materialize_cpp_cia_ops", once):
        yield


def demonstration_dropped(code: str) -> str:
    """An answer cell's code without its demonstration lines (top-level expressions, such as
    a print of the chapter's example): the checkpoint needs only the definitions."""
    tree = ast.parse(code)
    tree.body = [statement for statement in tree.body if not isinstance(statement, ast.Expr)]
    return ast.unparse(tree)


# ----------------------------------------------------------------------------- try it 7.4


class CallsOp(nn.Module):  # the chapter's Windowed, with the operator it calls passed in
    def __init__(self, op, k: int):
        super().__init__()
        self.op, self.k = op, k

    def forward(self, x):
        return self.op(x, self.k) + 1


CHAPTER_WINDOW_MAX = "def window_max(x, k):\n    return x.unfold(-1, k, 1).amax(dim=-1)\n"


def renamed_op(name: str):
    """The reference answer as the checkpoint runs it: its operator registered as `name`, since
    registering fxcourse::window_max again would replace the learner's (the registry is global),
    and without its demonstration line; on the chapter's window_max, not one the learner's cell
    defined again (the red team's redR: the reference called theirs, its error told as ours)."""

    def rewrite(code: str) -> str:
        code = CHAPTER_WINDOW_MAX + code.replace('"fxcourse::window_max"', f'"{name}"')
        return demonstration_dropped(code)

    return rewrite


def windows(make):
    """Inputs of 1 to 3 dimensions in three dtypes (uint8 among them: a kernel that negates,
    or rounds through a float, is wrong there); every window length k from 1 to 5 in each run
    (1 in one case only), with one window, two, or many. Float inputs with windows of 2 or more
    hold a NaN, which window_max carries into each window holding it (a kernel built on
    torch.fmax, or on torch.where(a > b, a, b), drops it), but for one float64 input in each
    run, whose window maxima are numbers (a kernel that rounds through float32 changes them;
    it passed one run in three while every float64 window held a NaN). One float32 input in
    each run is 3-D and stored transposed (a kernel that views x as rows, x.view(-1, n), fails
    there, as no "any input" kernel may)."""
    # a shape right for one k meets the others; the sixth case's k is above 1, so that a byte
    # input and a NaN-holding one have windows of two or more in every run
    k = make.each([1, 2, 3, 4, 5, random.Random(f"{make.run_seed}:7.4").randint(2, 5)])
    f32, f64, u8 = torch.float32, torch.float64, torch.uint8
    kinds = [(0, f32), (0, f64), (1, u8), (1, f64), (None, f32), (None, u8)]
    more, dtype = make.each(kinds)
    nan_held = (more, dtype) != (0, f64)
    length = k + (make.integer(2, 9) if more is None else more)
    transposed = (more, dtype) == (None, f32)  # 3-D, rows in no one block: no view(-1, n)
    leading = [make.integer(2, 4), make.integer(2, 4)] if transposed else []
    leading = leading or [make.integer(1, 4) for _ in range(make.integer(0, 2))]
    shape = (*leading, length)
    make.note(_("an input of shape {shape}, {dtype}, k={k}").format(shape=shape, dtype=dtype, k=k))
    if dtype == u8:  # bytes, each row starting at both ends: a window holds 0 beside 255
        drawn = (make.tensor(*shape) * 80 + 128).round().clamp(0, 255).to(u8)
        drawn[..., 0], drawn[..., 1] = 0, 255
        return k, drawn
    drawn = make.tensor(*shape, dtype=dtype)
    if transposed:  # the same values, stored with the last two dimensions swapped
        drawn = drawn.transpose(-1, -2).contiguous().transpose(-1, -2)
        make.note(_("stored transposed (not contiguous)"))
    if k > 1 and nan_held:  # a window of one element is the element: every kernel keeps it
        at = make.integer(0, length - 1)
        drawn[..., at] = float("nan")
        make.note(_("a NaN at position {at} of each row").format(at=at))
    return k, drawn


def _custom_nodes(program: torch.export.ExportedProgram) -> list:
    calls = [n for n in program.graph.nodes if isinstance(n.target, torch._ops.OpOverload)]
    return [n for n in calls if n.target.namespace != "aten"]


FAKE_TENSOR_LOG = "torch._subclasses.fake_tensor"  # logs, as an error, each fake kernel's raise


def exported_window(answer, k: int, x: torch.Tensor):
    """Export of a model calling the answer's window_max_op: the custom operators its graph
    calls, their fake values' shapes, dtypes and devices (the devices of an export of x on the
    meta device first: a fake kernel that names a device of its own, such as the CPU, says so
    there), whether each value is laid out as the real kernel's result, and the program's output;
    None when export found no fake kernel. The export and the layouts take x contiguous (a real
    kernel's result may follow its input's layout, which no fake kernel need copy); the program
    runs on x as drawn, maybe stored transposed."""
    example = x.contiguous()
    # Fake tensors cache kernels' results across exports; a fake kernel defined again in this
    # session must not be answered from that cache (the cache is private).
    torch._subclasses.fake_tensor.FakeTensorMode.cache_clear()
    try:  # a fake kernel that raises: its error is the Not yet, without torch's logged copy
        with hushed(FAKE_TENSOR_LOG, level=logging.CRITICAL):
            program = torch.export.export(CallsOp(answer.window_max_op, k), (example,))
    except RuntimeError as error:
        if "no fake impl" not in str(error):
            raise
        return None
    nodes = _custom_nodes(program)
    shapes = [tuple(node.meta["val"].shape) for node in nodes]
    dtypes = [node.meta["val"].dtype for node in nodes]
    with hushed(FAKE_TENSOR_LOG, level=logging.CRITICAL):
        on_meta = torch.export.export(CallsOp(answer.window_max_op, k), (example.to("meta"),))
    devices = [node.meta["val"].device for node in [*_custom_nodes(on_meta), *nodes]]
    real = answer.window_max_op(example, k)
    layouts = [_laid_out_as(node, real) for node in nodes]
    return (
        [str(node.target) for node in nodes],
        shapes,
        dtypes,
        devices,
        layouts,
        program.module()(x),
    )


def _laid_out_as(node: torch.fx.Node, real: torch.Tensor) -> bool:
    """Whether the fake kernel's value is a tensor of its own laid out as the real kernel's result
    (what torch.library.opcheck's fake-tensor test compares): no view of the operator's input,
    the same offset and the same strides where a size is above 1."""
    fake, given = node.meta["val"], node.args[0].meta["val"]

    def layout(tensor: torch.Tensor) -> tuple:
        strides = [s for s, size in zip(tensor.stride(), tensor.shape, strict=True) if size > 1]
        return strides, tensor.storage_offset()

    return not torch._C._is_alias_of(fake, given) and layout(fake) == layout(real)
