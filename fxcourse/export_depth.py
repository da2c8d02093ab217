"""Chapter 12's helpers: a draft export's report in short, and the case builders its
checkpoints give `check.cases` (fxcourse.tryit, cases drawn fresh from a seed at every run).

    draft_rows(program)        one (kind, expression or operator, your line) per reported problem
    range_case(make)           12.1: a range for n, an example size, batch sizes to call with
    runs(program, *inputs)     12.1: whether the exported program accepts these inputs
    range_probes(drawn, reference_program)   12.1: (inputs, accepted?, hint) to run a program on
    gcd_pairs(make)            12.2: pairs that need few and many steps, zeros, random pairs
    gcd_with_loop_runs(program, a, b)   12.2: the program's result, and how often loop bodies ran
    steps_outside_loops(program)        12.2: division or remainder nodes of the top-level graph
    interleave_exported(Interleave)     12.1: (answer, drawn) -> Interleave exported by the answer
    gcd_programs()                      12.2: each answer's Gcd exported once; .gcds(answer, pairs)
    gcd_library_calls(program)          12.2: calls of torch's own gcd or lcm
    raised_told(pairs, results)         12.2: the first pair whose run raised, with its error
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fxcourse.messages import _


def draft_rows(program) -> list[tuple[str, str, str]]:
    """(failure kind, the expression or operator it concerns, the innermost line of your code
    that caused it) for each problem in a draft export's report (`program._report`, private)."""
    rows = []
    for failure in program._report.failures:
        data = failure.data
        subject = data.get("expr") or data.get("op") or ""
        frames = data.get("user_stack") or []
        line = frames[-1]["loc"].split("#")[0].strip() if frames else ""
        rows.append((str(failure.failure_type), str(subject), line))
    return rows


@dataclass
class RangeCase:
    """A range [low, high] for n, the example size the export sees, and the batch sizes the
    program is then called with."""

    low: int
    high: int
    example_n: int
    batches: tuple[int, ...]


def range_case(make) -> RangeCase:
    """The chapter's range 2..32 in a run's first case, then a fresh range of at least 3 sizes,
    with two batches of 1 to 16 and one larger than the range's top (a batch bounded like n).
    A fresh range starts at 3 or more: a program checks a min of 2 or less at no run (section
    12.2), so n = low - 1 is refused by a bound of the program's own only from low = 3 on (the
    checkpoint asks below the range only there)."""
    if make.index == 0:
        case = RangeCase(2, 32, 5, (3, 1, 9))
    else:
        low = make.integer(3, 9)
        high = make.integer(low + 2, 48)
        batches = (make.integer(1, 16), make.integer(1, 16), make.integer(high + 1, 4 * high))
        case = RangeCase(low, high, make.integer(low, high), batches)
    make.note(f"n: {case.low}..{case.high}")
    return case


def runs(program, *inputs) -> bool:
    """Whether the exported program accepts the inputs (its guards and asserts raise if not)."""
    try:
        program.module()(*inputs)
        return True
    except Exception:
        return False


def range_probes(drawn: RangeCase, reference_program=None) -> list[tuple[tuple, bool, str]]:
    """12.1: (x and y, whether the program should accept them, the hint if it does not): the
    range's ends and the example size at the drawn batches, n just outside the range, a y whose
    width does not follow from n. Given the reference answer's program, each verdict is first
    checked against it (a disagreement is the course's bug: ReferenceFailed)."""
    import torch

    from fxcourse.reference import ReferenceFailed

    probes = []
    for batch, n in zip(drawn.batches, (drawn.low, drawn.high, drawn.example_n), strict=True):
        hint = _("the program should accept x of shape ({rows}, {n}) with its y")
        probes.append(((batch, n, 2 * n), True, hint.format(rows=batch, n=n)))
    for n in (drawn.low - 1, drawn.high + 1)[drawn.low <= 2 :]:
        hint = _("n = {n} is outside the range; the program must refuse it").format(n=n)
        probes.append(((3, n, 2 * n), False, hint))
    hint = _("a y whose width does not follow from n must be refused")
    probes.append(((3, drawn.example_n, 2 * drawn.example_n + 1), False, hint))
    made = [
        ((torch.randn(b, n), torch.randn(b, width)), ok, hint) for (b, n, width), ok, hint in probes
    ]
    for inputs, accepted, _hint in made if reference_program is not None else ():
        if runs(reference_program, *inputs) != accepted:
            shapes = [tuple(value.shape) for value in inputs]
            raise ReferenceFailed(f"the reference program's verdict on {shapes} is not {accepted}")
    return made


FIBONACCI = [1, 1]
while len(FIBONACCI) < 92:  # the last, 4660046610375530309, still fits in an int64
    FIBONACCI.append(FIBONACCI[-1] + FIBONACCI[-2])


def gcd_pairs(make) -> list[tuple[int, int]]:
    """Pairs to run: consecutive Fibonacci numbers (the most steps for their size; one pair
    needs 85 steps or more, more than any unrolled copy would hold), multiples, a zero on
    either side, random pairs, multiples of a factor past 2**32, whose gcd an int32 or narrower
    result cannot hold, and an odd number past 2**61 with an even divisor below 2**16: a
    remainder taken through a float division (a / b of int64 tensors is float32's; float64
    rounds past 2**53 to an even value) is wrong there (the red team's redQ: it passed)."""
    start = make.integer(20, 37)
    longest = make.integer(86, len(FIBONACCI) - 2)
    factor, wide = make.integer(2, 50), make.integer(2**33, 2**40)
    pairs = [
        (FIBONACCI[start + 1], FIBONACCI[start]),
        (make.integer(1, 99), 0),  # both sides, in every run: a loop that takes a mod b
        (0, make.integer(1, 99)),  # before testing b fails only on (a, 0) (the red team's redQ)
        (factor * make.integer(1, 1000), factor * make.integer(1, 1000)),
        (make.integer(0, 10**6), make.integer(1, 10**6)),
        (FIBONACCI[longest], FIBONACCI[longest + 1]),
        (wide * make.integer(1, 1000), wide * make.integer(1, 1000)),
        (make.integer(2**61, 2**62) | 1, 2 ** make.integer(1, 9) * make.integer(3, 99)),
    ]
    make.note(f"{pairs}")
    return pairs


LOOP_LIMIT = 1000  # runs of a loop's body: Euclid takes fewer than 100 steps on any int64 pair


class LoopRanTooLong(RuntimeError):
    pass


def gcd_with_loop_runs(program, a: int, b: int) -> tuple[object, int]:
    """The exported program's result for (a, b) (a float for a floating-point result; None when
    its loops' bodies ran more than LOOP_LIMIT times, which stops the program: a subtraction per
    run takes a / b runs; a str saying what came back when it is not one 0-dim tensor, such as
    the loop's (a, b) pair or a tensor of shape (1,); a ProgramRaised for an error the program
    raised, such as a mod b with b = 0), and how many times those bodies ran
    (counted by a hook on each
    body's graph module, removed after the call: every program.module() shares its bodies, so a
    hook left there would count, and stop, the calls for later pairs too)."""
    import torch

    module = program.module()
    runs = [0]

    def count(_module, _args) -> None:
        runs[0] += 1
        if runs[0] > LOOP_LIMIT:
            raise LoopRanTooLong(LOOP_LIMIT)

    loops = module.graph.find_nodes(op="call_function", target=torch.ops.higher_order.while_loop)
    bodies = [getattr(module, node.args[1].target) for node in loops]
    hooks = [body.register_forward_pre_hook(count) for body in bodies]
    try:
        result = module(torch.tensor(a), torch.tensor(b))
    except Exception as error:  # noqa: BLE001 - told with its pair (raised_told)
        if runs[0] > LOOP_LIMIT:  # however the loop passed the hook's error on
            return None, runs[0]
        return ProgramRaised(error), runs[0]
    finally:
        for hook in hooks:
            hook.remove()
    if not isinstance(result, torch.Tensor):
        return _("a value of type {kind}").format(kind=type(result).__name__), runs[0]
    if result.dim() != 0:
        return _("a tensor of shape {shape}").format(shape=tuple(result.shape)), runs[0]
    return (float if result.is_floating_point() else int)(result), runs[0]


class ProgramRaised:
    """12.2: the error an exported program raised for a pair: its type and its first line."""

    def __init__(self, error: Exception):
        first = (str(error).strip().splitlines() or [""])[0][:160]
        self.said = f"{type(error).__name__}: {first}" if first else type(error).__name__

    def __str__(self) -> str:
        return self.said


def raised_told(pairs: list, results: list) -> str:
    """12.2: what to tell of the first pair whose run of the program raised ("" for none): the
    pair and the error, not the program's generated line (the red team's redQ: a mod b with
    b = 0 was told as "remainder = torch.ops.aten.remainder.Tensor(arg0_1, arg1_1)")."""
    for pair, (got, _runs) in zip(pairs, results, strict=True):
        if not isinstance(got, ProgramRaised):
            continue
        if "ZeroDivisionError" in str(got):
            said = _(
                "the exported program divided by 0 for {pair}: where does your loop take a mod"
                " b, and can b be 0 there? (12.4)"
            )
            return said.format(pair=pair)
        said = _(
            "the exported program raised {error} for {pair}: call Gcd()(torch.tensor(a),"
            " torch.tensor(b)) on that pair to see where (12.4)"
        )
        return said.format(error=got, pair=pair)
    return ""


def capture_failure(error: Exception) -> str:
    """Export's refusal in one line: its type and the line that gives the reason (the first line
    often says only that a loop was not captured whole: the reason, such as "Encountered
    aliasing" or "torch.while_loop: unsupported cond_fn return type", comes later), followed by
    torch's explanation when it gives one."""
    lines = [line.strip() for line in str(error).strip().splitlines()] or [""]
    heads = ("Encountered", "torch.while_loop:", "torch.cond:")
    reasons = [line for line in lines if line.startswith(heads)] or lines[:1]
    explained = [line for line in lines if line.startswith("Explanation:")]
    said = " ".join(reasons[:1] + explained[:1])
    said = re.sub(r"\s*Found in <.*", "", said)  # a repr with an address: nothing to act on
    return f"{type(error).__name__}: {said[:240]}"


def steps_outside_loops(program) -> list[str]:
    """The division and remainder nodes outside every while_loop: in the top-level graph and in
    the subgraphs of other operators (a torch.cond's branches, a map's body), where a Euclid step
    is an unrolled copy. A while_loop's condition and body are not searched."""
    import torch

    aten = torch.ops.aten
    steps = {aten.remainder.Tensor, aten.remainder.Scalar, aten.fmod.Tensor, aten.fmod.Scalar}
    steps |= {aten.floor_divide.default, aten.div.Tensor_mode}
    found, searched = [], set()

    def search(graph_module) -> None:
        for node in graph_module.graph.nodes:
            # a true division is a step when it divides by a tensor (a / b), not by a number
            by_tensor = node.target is aten.div.Tensor and isinstance(node.args[1], torch.fx.Node)
            if node.target in steps or by_tensor:
                found.append(node.name)
            if node.target is torch.ops.higher_order.while_loop:
                continue
            for arg in node.args:  # a subgraph arrives as a get_attr of a GraphModule
                sub = getattr(graph_module, str(arg.target), None) if _is_get_attr(arg) else None
                if isinstance(sub, torch.fx.GraphModule) and id(sub) not in searched:
                    searched.add(id(sub))
                    search(sub)

    search(program.graph_module)
    return found


def _is_get_attr(arg) -> bool:
    import torch

    return isinstance(arg, torch.fx.Node) and arg.op == "get_attr"


def interleave_exported(interleave: type) -> Callable:
    """12.1: (answer, drawn) -> the chapter's Interleave exported with the answer's
    interleave_shapes(low, high), on an example whose batch is neither n nor 2 n."""

    def exported(answer, drawn: RangeCase):
        import torch
        from torch._dynamo.exc import UserError  # private
        from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

        from fxcourse.quiet import hushed

        n = drawn.example_n
        batch = next(b for b in (3, 5, 7) if b not in (n, 2 * n))
        example = (torch.randn(batch, n), torch.randn(batch, 2 * n))
        spec = answer.interleave_shapes(drawn.low, drawn.high)
        with hushed("torch.fx.experimental.symbolic_shapes", "torch._dynamo"):
            try:
                return torch.export.export(interleave(), example, dynamic_shapes=spec)
            except (UserError, ConstraintViolationError) as error:  # private; told in short
                raise refused_spec(error, drawn, example) from error

    return exported


def refused_spec(error: Exception, drawn: RangeCase, example: tuple) -> Exception:
    """12.1's Not yet when export refuses the answer's dynamic_shapes: the example's shapes and
    the first sentence of torch's error, not its whole text (red team redY: some 700
    characters), nor its suggested fixes, which may spell out the relation the try-it asks for
    (redD); y's width asked about only where torch's error is about it (redF2)."""
    from fxcourse.tryit import NotYet

    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0].split(" For more information")[0] if lines else type(error).__name__
    first += "" if first.endswith((".", "!", "?")) else "."
    x, y = (tuple(tensor.shape) for tensor in example)
    said = _(
        "torch.export.export refused the dynamic_shapes of interleave_shapes({low}, {high}) for "
        "x of shape {x} and y of shape {y}: {first}"
    ).format(low=drawn.low, high=drawn.high, x=x, y=y, first=first)
    if "L['y'].size()[1]" in text:
        said += _(" How does y's width follow from n? (12.2)")
    return NotYet(said)


class GcdPrograms:
    """12.2, for one checkpoint run: each answer's Gcd exported once (example (12, 18)) and its
    program reused for every pair. `loop_limit`: the runs of a loop's body that stop a program."""

    loop_limit = LOOP_LIMIT

    def __init__(self):
        self.exported: dict[type, object] = {}

    def __call__(self, answer):
        if answer.Gcd not in self.exported:
            import torch

            from fxcourse.quiet import hushed

            with hushed("torch._dynamo", "torch.fx.experimental.symbolic_shapes"):
                example = (torch.tensor(12), torch.tensor(18))
                self.exported[answer.Gcd] = torch.export.export(answer.Gcd(), example)
        return self.exported[answer.Gcd]

    def gcds(self, answer, pairs) -> list[tuple]:
        """For each pair: (the gcd computed, how often the loop's body ran)."""
        return [gcd_with_loop_runs(self(answer), a, b) for a, b in pairs]


def gcd_programs() -> GcdPrograms:
    return GcdPrograms()


def gcd_library_calls(program) -> list:
    """12.2: the calls of torch's own gcd or lcm, in the program's graph or any subgraph."""
    import torch

    aten = torch.ops.aten
    library = {aten.gcd.default, aten.gcd_.default, aten.lcm.default}
    return [
        node.target
        for graph_module in program.graph_module.modules()
        for node in graph_module.graph.nodes
        if node.target in library
    ]
