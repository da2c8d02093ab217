"""Chapter 7's case builders (fxcourse.export_cases): what every checkpoint run holds, so that
an answer wrong on one kind of case hears "Not yet" in every run, not in some (the red-team
review's answers: a bound off by one past the end, a written-state finder blind to
aten.batch_norm's unsuffixed writes)."""

from __future__ import annotations

import json
import os
import random
from types import SimpleNamespace

import check_cells
import pytest
import torch
from torch import nn
from torch.export import Dim

from courseware.repository import HERE
from fxcourse import export_cases, export_cases_late
from fxcourse.cases import makers_of

# Runs of 7.3's exported cases (each exports a program): `make test-checkpoints` asks for 20.
EXPORT_RUNS = int(os.environ.get("FXCOURSE_CASE_SEEDS", "1"))


def runs(builder, count: int, how_many: int = 200):
    for run_seed in random.Random().sample(range(10**6), how_many):
        yield run_seed, [builder(make) for make in makers_of(run_seed, count)]


def test_checkpoint_7_2_runs_the_first_row_past_the_end_every_time():
    for run_seed, drawn in runs(export_cases.row_picks, 6):
        picked = [(len(table), int(row)) for table, row in drawn]
        assert any(row == rows for rows, row in picked), (run_seed, picked)
        assert any(row > rows for rows, row in picked) and any(row < 0 for _, row in picked)


def test_checkpoint_7_3_runs_a_batchnorm_in_training_mode_every_time():
    def training_batchnorm(model: nn.Module) -> bool:
        return any(isinstance(m, nn.BatchNorm1d) and m.training for m in model.modules())

    for run_seed, drawn in runs(export_cases.stateful_models, 5, 100):
        assert any(training_batchnorm(model) for model, _x in drawn), run_seed


def written(program: torch.export.ExportedProgram) -> list[str]:  # the chapter's answer
    signature = program.run_decompositions().graph_signature
    return sorted(
        [*signature.buffers_to_mutate.values(), *signature.user_inputs_to_mutate.values()]
    )


def every_norm_buffer_written(program: torch.export.ExportedProgram) -> list[str]:
    """The red team's (s7, late) answer: a norm layer's buffers all listed, whatever its mode."""
    statistics = ("running_mean", "running_var", "num_batches_tracked")
    norms = [b for b in program.graph_signature.buffers if b.rsplit(".", 1)[-1] in statistics]
    return sorted({*written(program), *norms})


def test_checkpoint_7_3_refuses_a_norm_layers_buffers_listed_whatever_its_mode_in_every_run():
    """Every run holds a BatchNorm in eval mode, which writes none of its buffers: listing them
    all (right for training mode only) differs from the reference answer in every run."""
    for run_seed, drawn in runs(export_cases.stateful_models, 5, EXPORT_RUNS):
        cases = [SimpleNamespace(objects=lambda pair=pair: pair) for pair in drawn]
        _joined, program = export_cases.joined_program(cases, named=True)
        wanted = written(program)
        assert any(name.endswith("running_mean") for name in wanted), run_seed  # training mode
        assert every_norm_buffer_written(program) != wanted, run_seed


def changed_by_running(program: torch.export.ExportedProgram) -> list[str]:
    """The red team's (redF) answer: run the program on its example inputs and list the buffers
    and inputs whose values changed; it never reads what the program writes."""
    import copy

    from torch.export.graph_signature import InputKind

    module = program.module()
    args, kwargs = copy.deepcopy(program.example_inputs)
    before = {name: buffer.clone() for name, buffer in module.named_buffers()}
    arguments = [a.clone() for a in args]
    module(*args, **kwargs)
    names = [n for n, b in module.named_buffers() if not torch.equal(b, before[n])]
    inputs = program.graph_signature.input_specs
    users = [spec.arg.name for spec in inputs if spec.kind == InputKind.USER_INPUT]
    names += [n for n, a, b in zip(users, args, arguments, strict=True) if not torch.equal(a, b)]
    return sorted(names)


def test_checkpoint_7_3_refuses_judging_writes_by_running_the_program_in_every_run():
    """Every run has a buffer written with the values it already holds: a write that running
    the program cannot show, which the signature lists all the same."""
    for run_seed, drawn in runs(export_cases.stateful_models, 5, EXPORT_RUNS):
        cases = [SimpleNamespace(objects=lambda pair=pair: pair) for pair in drawn]
        _joined, program = export_cases.joined_program(cases, named=True)
        assert changed_by_running(program) != written(program), run_seed


def persistent_only(program: torch.export.ExportedProgram) -> list[str]:
    """The red team's (redL) answer: the written buffers that program.state_dict holds, and the
    written inputs; a buffer registered with persistent=False is a buffer all the same."""
    signature = program.run_decompositions().graph_signature
    buffers = [b for b in signature.buffers_to_mutate.values() if b in program.state_dict]
    return sorted([*buffers, *signature.user_inputs_to_mutate.values()])


def test_checkpoint_7_3_refuses_leaving_out_a_buffer_outside_the_state_dict_in_every_run():
    """Every run has a written buffer registered with persistent=False: export keeps its value
    among the program's constants, not in its state_dict, and lists its write all the same."""
    for run_seed, drawn in runs(export_cases.stateful_models, 5, EXPORT_RUNS):
        cases = [SimpleNamespace(objects=lambda pair=pair: pair) for pair in drawn]
        _joined, program = export_cases.joined_program(cases, named=True)
        wanted = written(program)
        assert any(name in program.constants for name in wanted), run_seed
        assert persistent_only(program) != wanted, run_seed


class Masked(nn.Module):  # chapter 7's
    def forward(self, tokens, mask):
        return (tokens * mask.unsqueeze(-1)).sum(dim=1)


def masked_exported(
    top: int | None, by_keyword: bool = False, any_width: bool = False
) -> SimpleNamespace:
    """7.1's answer with its sizes bounded by `top` (None: the chapter's, unbounded), its
    example passed positionally or (by_keyword) as kwargs, its features dynamic too
    (any_width)."""
    batch, length = (
        (Dim("batch"), Dim("length"))
        if top is None
        else (Dim("batch", max=top), Dim("length", max=top))
    )
    shared = {0: batch, 1: length}
    example = (torch.randn(2, 5, 4), torch.ones(2, 5))
    spec = {"tokens": {**shared, 2: Dim("features")} if any_width else shared, "mask": shared}
    args, kwargs = ((), dict(zip(spec, example, strict=True))) if by_keyword else (example, None)
    return SimpleNamespace(
        masked_exported=torch.export.export(Masked(), args, kwargs, dynamic_shapes=spec)
    )


def judged_7_1(answer, drawn) -> bool:
    """Whether 7.1's checkpoint passes the answer on one run's cases."""
    batches, lengths, features = export_cases.promised_ranges(answer.masked_exported)
    if not (
        export_cases.every_size_from_one(batches) and export_cases.every_size_from_one(lengths)
    ):
        return False
    if features is not None:  # the prompt: the 4 features stay fixed
        return False
    return all(not isinstance(export_cases.run_program(answer, *inputs), str) for inputs in drawn)


def test_checkpoint_7_1_refuses_sizes_bounded_however_high_in_every_run():
    """The red team's (s7, late) bounds just above the million the check used to ask for."""
    reference, wrong = masked_exported(None), masked_exported(10**6 + 1)
    for run_seed, drawn in runs(export_cases.masked_inputs, 6, 20):
        assert judged_7_1(reference, drawn), run_seed
        assert not judged_7_1(wrong, drawn), run_seed


def test_checkpoint_7_1_refuses_a_program_whose_features_are_dynamic():
    """Known fault (s35, the red team's redD too): the prompt keeps the 4 features fixed, yet a
    program that promised any width passed."""
    any_width = masked_exported(None, any_width=True)
    assert export_cases.promised_ranges(any_width.masked_exported)[2] is not None
    for run_seed, drawn in runs(export_cases.masked_inputs, 6, 3):
        assert not judged_7_1(any_width, drawn), run_seed


def test_checkpoint_7_1_passes_a_program_exported_from_keyword_arguments():
    """The red team's (redB) honest answer: the example given as kwargs; its program takes the
    inputs by name, and the checkpoint called it positionally ("kwarg keyword mismatch")."""
    by_keyword = masked_exported(None, by_keyword=True)
    for run_seed, drawn in runs(export_cases.masked_inputs, 6, 5):
        assert judged_7_1(by_keyword, drawn), run_seed


def test_checkpoint_7_2_runs_the_first_and_the_last_row_every_time():
    for run_seed, drawn in runs(export_cases.row_picks, 6):
        picked = [(len(table), int(row)) for table, row in drawn]
        assert any(row == 0 for _, row in picked), (run_seed, picked)
        assert any(row == rows - 1 for rows, row in picked), (run_seed, picked)


def picker(low_ok, high_ok):
    """A learner's PickRowChecked whose checks are row >= low_ok(...) and row < high_ok(rows)."""

    class PickRowChecked(nn.Module):
        def forward(self, x, i):
            row = i.item()
            torch._check(row >= low_ok)
            torch._check(row < high_ok(x.shape[0]))
            return x[row : row + 1] * 3

    return SimpleNamespace(PickRowChecked=PickRowChecked)


def refused_in_every_run(wrong: dict) -> None:
    """Each of 7.2's `wrong` answers, judged as the checkpoint judges them on 12 runs, refuses a
    row the reference accepts or accepts one it refuses in every run."""
    reference = picker(0, lambda rows: rows)
    for run_seed, drawn in runs(export_cases.row_picks, 6, 12):
        wanted = [export_cases.pick(reference, table, row) for table, row in drawn]
        for name, answer in wrong.items():
            mine = [export_cases.pick(answer, table, row) for table, row in drawn]
            assert any(
                isinstance(m, str) != isinstance(w, str) for m, w in zip(mine, wanted, strict=True)
            ), (name, run_seed)


def test_checkpoint_7_2_refuses_a_bound_off_by_one_inside_the_table_in_every_run():
    """The red team's (s6, late) bounds off by one inside the table, judged as the checkpoint
    judges them on 12 runs: 1-based rows (row 0 refused) and the last row refused."""
    wrong = {"row >= 1": picker(1, lambda rows: rows), "row < rows - 1": picker(0, lambda r: r - 1)}
    refused_in_every_run(wrong)


def test_checkpoint_7_2_refuses_a_bound_written_as_a_number_in_every_run():
    """The red team's (redB) `torch._check(row < 4)` passed when a run's tables were small: the
    last row asked now lies past the end of the tables asked about rows past their end, so every
    number (the example's 5 rows among them) refuses a row x has or accepts one it lacks."""
    refused_in_every_run(
        {bound: picker(0, lambda _rows, bound=bound: bound) for bound in range(2, 14)}
    )


def refusing_minus_one_alone():
    """The red team's (redJ) `torch._check(row != -1)` beside the upper bound: -2 gets through."""

    class PickRowChecked(nn.Module):
        def forward(self, x, i):
            row = i.item()
            torch._check(row != -1)
            torch._check(row < x.shape[0])
            return x[row : row + 1] * 3

    return SimpleNamespace(PickRowChecked=PickRowChecked)


def test_checkpoint_7_2_asks_for_row_minus_one_and_one_further_below_every_time():
    for run_seed, drawn in runs(export_cases.row_picks, 6):
        rows = [int(row) for _table, row in drawn]
        assert -1 in rows and any(row < -1 for row in rows), (run_seed, rows)


def test_checkpoint_7_2_refuses_a_check_that_refuses_minus_one_alone_in_every_run():
    refused_in_every_run({"row != -1": refusing_minus_one_alone()})


def test_checkpoint_7_2_tells_a_forward_that_returns_nothing(monkeypatch):
    """A forward without `return` heard "a wrong value for a row that x has" (red team redR)."""
    from fxcourse import tryit

    class PickRowChecked(nn.Module):
        def forward(self, x, i):
            row = i.item()
            torch._check(row >= 0)
            torch._check(row < x.shape[0])
            x[row : row + 1] * 3  # no return

    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "checkpoint": tryit.checkpoint}
    namespace["PickRowChecked"] = PickRowChecked
    check = check_cells.check_source("07_torch_export", "7.2")
    problem = check_cells.judged(check, namespace, monkeypatch).problem
    assert problem and "None" in problem and "return" in problem, problem


def test_checkpoint_7_2_tells_a_row_count_made_constant(monkeypatch):
    """torch._check(row < len(x)) makes export fix the rows that Dim lets vary; the learner
    heard "is an `if`, an `and` or a chained comparison left?", none of which was (redJ3)."""
    from fxcourse import tryit

    class PickRowChecked(nn.Module):
        def forward(self, x, i):
            row = i.item()
            torch._check(row >= 0)
            torch._check(row < len(x))
            return x.narrow(0, row, 1).mul(3)

    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "checkpoint": tryit.checkpoint}
    namespace["PickRowChecked"] = PickRowChecked
    check = check_cells.check_source("07_torch_export", "7.2")
    problem = check_cells.judged(check, namespace, monkeypatch).problem
    assert problem and "made the number of rows a constant" in problem, problem


class IndexSelected(nn.Module):  # the red team's (redB) rows refused by index_select, not a check
    def forward(self, x, i):
        return torch.index_select(x, 0, i.reshape(1)) * 3


def test_checkpoint_7_2_tells_a_refusal_by_a_check_from_one_by_another_error():
    """Only a failed torch._check (a runtime assertion of the program) counts as refusing a row;
    index_select's own IndexError is reported as a refusal by no check, in every run."""
    reference = picker(0, lambda rows: rows)
    unchecked = SimpleNamespace(PickRowChecked=IndexSelected)
    for run_seed, drawn in runs(export_cases.row_picks, 6, 12):
        for table, row in drawn:
            wanted = export_cases.pick(reference, table, row)
            mine = export_cases.pick(unchecked, table, row)
            if isinstance(wanted, str):
                assert wanted == "refused", run_seed
                assert mine[0] == "refused unchecked" and "IndexError" in mine[1], run_seed
            else:
                torch.testing.assert_close(mine, wanted)


def test_checkpoint_7_5_asks_for_a_path_beside_one_that_extends_its_name_every_time():
    """In every case one asked path (not the root) has a sibling whose name goes on from its
    own (`1` and `13`, `block` and `block2`): a prefix test without a dot boundary reads the
    sibling's operators too (the red team's s6 answer passed every run)."""
    for run_seed, drawn in runs(export_cases_late.module_trees, 5, 100):
        for model, _x, paths in drawn:
            names = [name for name, _module in model.named_modules()]
            extended = [
                p
                for p in paths
                if p
                and any(
                    n.startswith(p) and n[len(p)] != "."
                    for n in names
                    if n != p and len(n) > len(p)
                )
            ]
            assert extended, (run_seed, model, paths)


def test_checkpoint_7_5_refuses_a_path_prefix_without_a_dot_boundary():
    def prefixed(program, path):
        found = []
        for node in [n for n in program.graph.nodes if n.op == "call_function"]:
            stack = [p for p, _type in node.meta.get("nn_module_stack", {}).values()]
            if path == "" or any(p.startswith(path) for p in stack):
                found.append(str(node.target))
        return sorted(found)

    for run_seed, drawn in runs(export_cases_late.module_trees, 5, 2):
        for model, x, paths in drawn:
            program = torch.export.export(model, (x,))
            wanted = [export_cases_late.ops_by_module_stack(program, p) for p in paths]
            assert [prefixed(program, p) for p in paths] != wanted, (run_seed, model, paths)


def unflattened_walk(program, path):  # the chapter's answer
    def walk(module):
        found = []
        for node in module.graph.nodes:
            if node.op == "call_function":
                found.append(str(node.target))
            elif node.op == "call_module":
                found += walk(module.get_submodule(node.target))
        return found

    return sorted(walk(torch.export.unflatten(program).get_submodule(path)))


def named_modules_walk(program, path):
    """The red team's (redB) answer: the graphs of every module under path, each read once."""
    found = []
    for name, module in torch.export.unflatten(program).named_modules():
        if path == "" or name == path or name.startswith(path + "."):
            nodes = module.graph.nodes if hasattr(module, "graph") else []
            found += [str(n.target) for n in nodes if n.op == "call_function"]
    return sorted(found)


def module_stack_walk(program, path):
    """The red team's (redB) answer: nn_module_stack read straight, no unflatten."""
    return export_cases_late.ops_by_module_stack(program, path)


def dead_unflatten_walk(program, path):
    """The red team's (redD) answer: redB's, beside an unflatten whose module is never read."""
    torch.export.unflatten(program)
    return module_stack_walk(program, path)


def test_checkpoint_7_5_refuses_reading_each_module_once_and_skipping_unflatten():
    """Every case holds a layer called twice: a walk over named_modules() counts its operators
    once. An answer that never builds an UnflattenedModule is told so, the reference is not;
    one that builds it and reads the flat graph's nn_module_stack instead finds nothing there
    (only unflatten sees that metadata)."""
    answers = {
        name: SimpleNamespace(ops_inside=walk)
        for name, walk in [
            ("reference", unflattened_walk),
            ("named modules", named_modules_walk),
            ("module stack", module_stack_walk),
            ("dead unflatten", dead_unflatten_walk),
        ]
    }
    for run_seed, drawn in runs(export_cases_late.module_trees, 5, 2):
        for model, x, paths in drawn:
            program = torch.export.export(model, (x,))
            ask = export_cases_late.ops_of_paths(program, paths)
            found = {name: ask(answer) for name, answer in answers.items()}
            assert found["reference"][1] and not found["module stack"][1], run_seed
            assert found["dead unflatten"][1], run_seed
            assert found["dead unflatten"][0] != found["reference"][0], (run_seed, model)
            assert found["named modules"][0] != found["reference"][0], (run_seed, model)
            stacks = [n.meta.get("nn_module_stack") for n in program.graph.nodes]
            assert any(stacks), "the program handed in keeps its metadata"


def test_checkpoint_7_3_hands_a_program_that_writes_nothing_in_every_run(monkeypatch):
    """The red team (redD): the check handed one program joined from its five cases, which
    always writes, so an answer that fails on a program with no writes passed. Each run now
    exports a case that writes nothing alone."""
    from fxcourse import tryit

    fails_on_nothing = """
def written_state(program):
    signature = program.run_decompositions().graph_signature
    names = [*signature.buffers_to_mutate.values(), *signature.user_inputs_to_mutate.values()]
    assert names, "nothing written"
    return sorted(names)
"""
    check = check_cells.check_source("07_torch_export", "7.3")
    for seed in (1, 2):
        namespace = {"__name__": "chapter", "torch": torch, "nn": nn}
        namespace["checkpoint"] = tryit.checkpoint
        exec(compile(fails_on_nothing, "answer", "exec"), namespace)
        tryit.replay("7.3", seed)
        problem = check_cells.judged(check, namespace, monkeypatch).problem
        assert problem and "nothing written" in problem, problem


def test_checkpoint_7_7_runs_a_norm_and_a_linear_the_backend_lacks_every_time():
    def kinds(model):
        return {type(m).__name__ for m in model.modules()}

    for run_seed, drawn in runs(export_cases_late.layer_stacks, 5, 100):
        held = set().union(*(kinds(model) for model, _x in drawn))
        assert {"GroupNorm", "RMSNorm", "Resampled", "Linear", "LayerNorm"} <= held, run_seed
        assert "Projected" in held, run_seed  # aten.matmul: not core, not the backend's (redJ)


def lower_keeping(rule):
    """A learner's lower_for_backend that keeps every default decomposition's operator
    for which rule(its name) holds."""

    def lower_for_backend(program):
        table = torch.export.default_decompositions()
        for op in [op for op in table if rule(str(op))]:
            del table[op]
        return program.run_decompositions(table)

    return SimpleNamespace(lower_for_backend=lower_for_backend)


def test_checkpoint_7_7_refuses_a_rule_keyed_on_the_names_norm_and_linear():
    """The red team's (s6, late) rule, and one keyed on "layer_norm" and "linear", judged as the
    checkpoint judges them: an operator outside core ATen is left in some case of every run,
    and none by the reference."""
    reference = lower_keeping(
        lambda name: name in ("aten.linear.default", "aten.layer_norm.default")
    )
    wrong = {
        "linear or norm": lower_keeping(lambda name: "linear" in name or "norm" in name),
        "linear or layer_norm": lower_keeping(
            lambda name: "linear" in name or "layer_norm" in name
        ),
        "linear, layer_norm and matmul (redJ)": lower_keeping(
            lambda name: name.split(".")[1] in ("linear", "layer_norm", "matmul")
        ),
    }
    for run_seed in random.Random().sample(range(10**6), 1):  # 5 s: an export, three lowerings
        cases = [drawn_again(export_cases_late.layer_stacks, run_seed, n) for n in range(5)]
        joined, program = export_cases.joined_program(cases)
        summary = export_cases_late.lowered_summary(tuple(case.objects()[1] for case in cases))
        assert not any(left_outside_core(reference, summary, joined, program)), run_seed
        for name, answer in wrong.items():
            assert any(left_outside_core(answer, summary, joined, program)), (name, run_seed)


def drawn_again(builder, run_seed: int, index: int, count: int = 5):
    """A case as a checkpoint holds it: objects() draws it afresh from its seed each time."""
    return SimpleNamespace(objects=lambda: builder(makers_of(run_seed, count)[index]))


def left_outside_core(answer, summary, joined, program) -> list:
    calls = summary(answer, program)[0]
    return [export_cases_late.operators_of(joined, calls, n)[1] for n in range(1, 6)]


def test_checkpoint_7_4_tells_a_fake_kernel_whose_tensor_is_on_another_device():
    """The red team's (redD) fake kernel made its tensor on the meta device, with the right shape
    and dtype: the export's meta["val"] then says meta where the real kernel's result is on the
    input's device, and the checkpoint compares devices too."""

    def window_op(name: str, device: str | None) -> SimpleNamespace:
        @torch.library.custom_op(f"fxcourse_redd::{name}", mutates_args=())
        def op(x: torch.Tensor, k: int) -> torch.Tensor:
            return x.unfold(-1, k, 1).amax(dim=-1)

        @op.register_fake
        def _(x, k):
            shape = (*x.shape[:-1], x.shape[-1] - k + 1)
            return torch.empty(shape, dtype=x.dtype, device=device or x.device)

        return SimpleNamespace(window_max_op=op)

    x = torch.randn(2, 7, dtype=torch.float64)
    mine = export_cases.exported_window(window_op("on_meta", "meta"), 3, x)
    wanted = export_cases.exported_window(window_op("on_input", None), 3, x)
    assert mine[1:3] == wanted[1:3]  # the shape and the dtype are right
    assert mine[3] != wanted[3] == [torch.device("meta"), x.device]
    torch.testing.assert_close(mine[5], wanted[5])


def test_checkpoint_7_4_tells_a_fake_kernel_that_names_the_cpu():
    """The red team's (redH) fake kernel made its tensor on the CPU whatever the input's device:
    right for every CPU input, wrong for an input elsewhere (the meta export shows it)."""

    @torch.library.custom_op("fxcourse_redh::on_cpu", mutates_args=())
    def on_cpu(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.unfold(-1, k, 1).amax(dim=-1)

    @on_cpu.register_fake
    def _(x, k):
        return torch.empty((*x.shape[:-1], x.shape[-1] - k + 1), dtype=x.dtype, device="cpu")

    x = torch.randn(3, 6)
    devices = export_cases.exported_window(SimpleNamespace(window_max_op=on_cpu), 2, x)[3]
    assert devices == [torch.device("cpu")] * 2


def test_checkpoint_7_4_draws_bytes_every_time():
    """uint8 inputs in every run: a kernel that negates (-(-x).amin) wraps there (redJ)."""
    for run_seed, drawn in runs(export_cases.windows, 6, 50):
        dtypes = {x.dtype for _k, x in drawn}
        assert dtypes == {torch.float32, torch.float64, torch.uint8}, run_seed
        rows = [x.reshape(-1, x.shape[-1]) for _k, x in drawn if x.dtype == torch.uint8]
        assert all((row[:, :2] == torch.tensor([0, 255])).all() for row in rows), run_seed


def test_checkpoint_7_4_draws_an_input_no_row_view_takes_every_time():
    """The red team's (redP) real kernel viewed x as rows, x.view(-1, n): right for every
    contiguous input. Each run holds a 3-D float32 input stored transposed, two or more rows in
    each of its first two dims (a size-1 dim would let the view merge)."""
    for run_seed, drawn in runs(export_cases.windows, 6, 100):
        apart = [x for _k, x in drawn if not x.is_contiguous()]
        assert len(apart) == 1 and apart[0].dim() == 3, run_seed
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            apart[0].view(-1, apart[0].shape[-1])


def test_checkpoint_7_4_takes_a_real_kernel_whose_result_follows_its_inputs_layout():
    """torch.maximum over shifted slices is right; on an input stored transposed its result is
    laid out as the input, which no fake kernel need copy: the layouts are judged on x made
    contiguous, the values on x as drawn (where a row view fails)."""

    @torch.library.custom_op("fxcourse_redp::maxima_of_slices", mutates_args=())
    def op(x: torch.Tensor, k: int) -> torch.Tensor:
        count = x.shape[-1] - k + 1
        found = x[..., :count]
        for start in range(1, k):
            found = torch.maximum(found, x[..., start : start + count])
        return found.clone()

    @op.register_fake
    def _(x, k):
        return x.new_empty((*x.shape[:-1], x.shape[-1] - k + 1))

    x = torch.randn(2, 3, 7).transpose(-1, -2).contiguous().transpose(-1, -2)
    *_, layouts, output = export_cases.exported_window(SimpleNamespace(window_max_op=op), 3, x)
    assert all(layouts)
    torch.testing.assert_close(output, x.unfold(-1, 3, 1).amax(dim=-1) + 1)


def test_checkpoint_7_4_leaves_out_torchs_logged_copy_of_a_fake_kernels_error(capfd):
    """A fake kernel that raises (the red team's, redP: a tuple added to a SymInt) is told by the
    Not yet; torch also logged it, 25 lines of traceback above the verdict."""

    @torch.library.custom_op("fxcourse_redp::tuple_plus_int", mutates_args=())
    def op(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.unfold(-1, k, 1).amax(dim=-1)

    @op.register_fake
    def _(x, k):
        return x.new_empty(x.shape[:-1] + (x.shape[-1] - k + 1))  # no comma: not a tuple

    with pytest.raises(TypeError, match="can only concatenate tuple"):
        export_cases.exported_window(SimpleNamespace(window_max_op=op), 3, torch.randn(2, 7))
    assert "fake tensor raised" not in capfd.readouterr().err


def negated(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redJ): -min(-x)
    return -((-x).unfold(-1, k, 1).amin(dim=-1))


def in_float32(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redH)
    return x.float().unfold(-1, k, 1).amax(dim=-1).to(x.dtype)


def fmax_windows(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redL): NaN dropped
    count = x.shape[-1] - k + 1
    found = x[..., :count].clone()
    for start in range(1, k):
        found = torch.fmax(found, x[..., start : start + count])
    return found


def chapter_7_before(tryit_id: str, setup_start: str) -> tuple[dict, str]:
    """A namespace holding chapter 7's code cell that starts with `setup_start`, and the source
    of `tryit_id`'s check cell."""
    from fxcourse import tryit

    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "checkpoint": tryit.checkpoint}
    setup = check_cells.code_cell_starting("07_torch_export", setup_start)
    exec(compile(setup, "setup", "exec"), namespace)
    return namespace, check_cells.check_source("07_torch_export", tryit_id)


@pytest.mark.parametrize("kernel", [in_float32, negated, fmax_windows])
def test_checkpoint_7_4_wants_the_window_maxima_exactly(monkeypatch, kernel):
    """The red team's (redH) real kernel took the maxima in float32 and cast them back: within
    a tolerance on the float64 cases, yet a maximum is one of the input's values, exactly; a
    kernel that negates is wrong for bytes (redJ); one built on torch.fmax drops a NaN (redL)."""
    namespace, check = chapter_7_before("7.4", "def window_max(")

    @torch.library.custom_op("fxcourse::window_max", mutates_args=())  # the name asked for
    def rounded(x: torch.Tensor, k: int) -> torch.Tensor:
        return kernel(x, k)

    @rounded.register_fake
    def _(x, k):
        return x.new_empty((*x.shape[:-1], x.shape[-1] - k + 1))

    namespace["window_max_op"] = rounded
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "window_max(x, k)" in result.problem, result.problem


def a_view_of_x(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redO): aliasing x
    return x[..., k - 1 :]


def strided(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redO): other strides
    return torch.empty_like(x)[..., k - 1 :]


@pytest.mark.parametrize("fake", [a_view_of_x, strided])
def test_checkpoint_7_4_refuses_a_fake_kernel_laid_out_unlike_the_real_one(monkeypatch, fake):
    """Fake kernels with the right shape, dtype and device that torch.library.opcheck fails (the
    chapter says to run it): a view of the input (outputs_alias_inputs) and a slice of an empty
    tensor as large as x (its strides and offset). The checkpoint compares the fake value's
    layout with the real kernel's result, and that it is no view of x."""
    problem = judged_with_fake(fake, monkeypatch)
    assert problem and "laid out" in problem, problem


def judged_with_fake(fake, monkeypatch) -> str | None:
    """7.4's checkpoint on the chapter's real kernel as fxcourse::window_max with `fake` as its
    fake kernel: its problem, or None."""
    namespace, check = chapter_7_before("7.4", "def window_max(")

    @torch.library.custom_op("fxcourse::window_max", mutates_args=())  # the name asked for
    def window_max_op(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.unfold(-1, k, 1).amax(dim=-1)

    window_max_op.register_fake(fake)
    namespace["window_max_op"] = window_max_op
    return check_cells.judged(check, namespace, monkeypatch).problem


def test_checkpoint_7_5_tells_a_tuple_it_is_not_the_list_asked_for(monkeypatch):
    """The red team's (redJ) right operators in a sorted tuple heard "which ops, how often?":
    the message now names the type."""
    namespace, check = chapter_7_before("7.5", "class Block(nn.Module):")
    namespace["ops_inside"] = lambda program, path: tuple(unflattened_walk(program, path))
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "gave a tuple: return a sorted list" in result.problem


def test_the_reference_for_7_5_gives_no_ops_for_an_identity_or_an_unused_submodule():
    """Unflatten leaves an Identity, and a submodule forward never calls, as plain modules with
    no graph: the reference answer gives them no operators, as nn_module_stack does."""
    code = json.loads((HERE.root / "fxcourse" / "answers.json").read_text())["7.5"]["code"]
    namespace = {"torch": torch}
    exec(compile(code.rsplit("\n\nprint(", 1)[0], "reference", "exec"), namespace)  # noqa: S102

    class Idle(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear, self.same, self.spare = nn.Linear(4, 4), nn.Identity(), nn.Linear(4, 4)

        def forward(self, x):
            return self.same(self.linear(x)).relu()

    program = torch.export.export(Idle(), (torch.randn(2, 4),))
    for path in ("", "linear", "same", "spare"):
        wanted = export_cases_late.ops_by_module_stack(program, path)
        assert namespace["ops_inside"](program, path) == wanted, path


def test_checkpoint_7_1_tells_sizes_marked_dynamic_without_a_promised_range(monkeypatch):
    """The red team's (redR): inputs marked with torch._dynamo.mark_dynamic and exported without
    dynamic_shapes give a program with symbolic sizes and empty range_constraints; the
    checkpoint's own lookup raised KeyError (s31), told as an error of the learner's code."""
    from fxcourse import tryit

    tokens, mask = torch.randn(2, 5, 4), torch.ones(2, 5)
    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "Dim": Dim}
    namespace |= {"checkpoint": tryit.checkpoint, "masked": Masked(), "tokens": tokens}
    namespace["mask"] = mask
    marked = tokens.clone(), mask.clone()
    for tensor in marked:
        torch._dynamo.mark_dynamic(tensor, 0)
        torch._dynamo.mark_dynamic(tensor, 1)
    namespace["masked_exported"] = torch.export.export(Masked(), marked)
    check = check_cells.check_source("07_torch_export", "7.1")
    for _ in range(3):
        result = check_cells.judged(check, namespace, monkeypatch)
        assert result.problem and "dynamic_shapes" in result.problem, result.problem
        assert "KeyError" not in result.problem, result.problem


def test_checkpoint_7_5_tells_operators_listed_as_objects_not_names(monkeypatch):
    """The red team's (redR): the right operators, as often as they are called, as OpOverload
    objects (node.target) where the prompt asks for str(node.target): "which ops, how often?"
    sent the learner the wrong way."""
    namespace, check = chapter_7_before("7.5", "class Block(nn.Module):")

    def as_targets(program, path):  # the chapter's walk, each node.target kept as it is
        def walk(module):
            found = []
            for node in module.graph.nodes:
                if node.op == "call_function":
                    found.append(node.target)
                elif node.op == "call_module":
                    found += walk(module.get_submodule(node.target))
            return found

        return sorted(walk(torch.export.unflatten(program).get_submodule(path)), key=str)

    namespace["ops_inside"] = as_targets
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "str(node.target)" in result.problem, result.problem


def test_checkpoint_7_4_runs_the_reference_on_the_chapters_window_max(monkeypatch):
    """The red team's (redR): window_max defined again in the try-it cell, one window short, and
    called by the learner's op: the reference's op called it too, so its error was told as the
    course's ("a bug in the course"), and otherwise the right fake kernel was blamed."""
    namespace, check = chapter_7_before("7.4", "def window_max(")

    def window_max(x, k):  # one window short
        return torch.stack([x[..., s : s + k].amax(dim=-1) for s in range(x.shape[-1] - k)], -1)

    @torch.library.custom_op("fxcourse::window_max", mutates_args=())
    def short(x: torch.Tensor, k: int) -> torch.Tensor:
        return window_max(x, k)

    @short.register_fake
    def _(x, k):
        return x.new_empty((*x.shape[:-1], x.shape[-1] - k + 1))

    namespace |= {"window_max": window_max, "window_max_op": short}
    for _ in range(3):
        problem = check_cells.judged(check, namespace, monkeypatch).problem
        assert problem and "course" not in problem and "laid out" not in problem, problem


def test_checkpoint_7_4_tells_a_fake_kernel_without_return_by_no_line_of_torchs(monkeypatch):
    """A fake kernel that forgets `return` heard "(line 1): a None reached it": line 1 of a
    lambda torch.library runs with exec, no line of the learner's (red team redR)."""
    namespace, check = chapter_7_before("7.4", "def window_max(")
    window_max = namespace["window_max"]

    @torch.library.custom_op("fxcourse::window_max", mutates_args=())
    def op(x: torch.Tensor, k: int) -> torch.Tensor:
        return window_max(x, k)

    @op.register_fake
    def _(x, k):
        x.new_empty((*x.shape[:-1], x.shape[-1] - k + 1))  # no return

    namespace["window_max_op"] = op
    problem = check_cells.judged(check, namespace, monkeypatch).problem
    assert problem and "line 1" not in problem and "return its value" in problem, problem


def test_checkpoint_7_1_asks_whether_a_bounded_batch_may_be_any_size(monkeypatch):
    """A batch Dim with max=2**20 is refused (the prompt asks for any batch); the message asked
    nothing (red team honT): it now asks what 12.1's does."""
    from fxcourse import tryit

    tokens, mask = torch.randn(2, 5, 4), torch.ones(2, 5)
    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "Dim": Dim}
    namespace |= {"checkpoint": tryit.checkpoint, "masked": Masked(), "tokens": tokens}
    batch, length = Dim("batch", max=2**20), Dim("length")
    shapes = ({0: batch, 1: length}, {0: batch, 1: length})
    namespace["masked_exported"] = torch.export.export(
        Masked(), (tokens, mask), dynamic_shapes=shapes
    )
    check = check_cells.check_source("07_torch_export", "7.1")
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "may the batch be any size from 1?" in result.problem


def test_checkpoint_7_6_gives_the_learners_aoti_check_setting_back(monkeypatch):
    """7.6 runs each side with AOTI_RUNTIME_CHECK_INPUTS unset (as in a new kernel), and left
    the learner's kernel without the value section 7.8's cell had set (tester honW)."""
    monkeypatch.setenv("AOTI_RUNTIME_CHECK_INPUTS", "1")
    seen = []

    def package_verdicts(path, model, batches):
        seen.append(os.environ.get("AOTI_RUNTIME_CHECK_INPUTS"))
        return {}

    answer = SimpleNamespace(package_verdicts=package_verdicts)
    assert export_cases_late.verdicts_for(answer, "missing.pt2", nn.Identity(), [1], "") == (
        {},
        False,
    )
    assert seen == [None] and os.environ["AOTI_RUNTIME_CHECK_INPUTS"] == "1"
    monkeypatch.delenv("AOTI_RUNTIME_CHECK_INPUTS")
    export_cases_late.verdicts_for(answer, "missing.pt2", nn.Identity(), [1], "")
    assert "AOTI_RUNTIME_CHECK_INPUTS" not in os.environ


def test_7_6_a_checks_setting_of_0_made_before_the_call_stays_until_the_answer_changes_it(
    tmp_path, monkeypatch
):
    """The red team (redN5): os.environ.setdefault("AOTI_RUNTIME_CHECK_INPUTS", "1") passed, as
    every case started with the variable unset; a learner's shell may hold "0". Every run now
    starts cases with a real package both ways."""
    monkeypatch.delenv("AOTI_RUNTIME_CHECK_INPUTS", raising=False)
    seen = []

    def package_verdicts(path, model, batches):
        os.environ.setdefault("AOTI_RUNTIME_CHECK_INPUTS", "1")
        seen.append(os.environ["AOTI_RUNTIME_CHECK_INPUTS"])
        return {}

    answer = SimpleNamespace(package_verdicts=package_verdicts)
    export_cases_late.verdicts_for(answer, "missing.pt2", nn.Identity(), [1], "", "0")
    export_cases_late.verdicts_for(answer, "missing.pt2", nn.Identity(), [1], "", None)
    assert seen == ["0", "1"] and "AOTI_RUNTIME_CHECK_INPUTS" not in os.environ
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).eval()
    program = torch.export.export(model, (torch.randn(3, 4),))
    package = tmp_path / "tiny.pt2"
    package.write_bytes(b"")
    builder = export_cases_late.package_cases(str(tmp_path / "cases"), program, str(package), model)
    for run_seed, drawn in runs(builder, 6, 20):
        presets = {case[4] for case in drawn if case[3] != "no package"}
        assert presets == {None, "0"}, run_seed


def outputs_of_kind(tmp_path, kind: str):
    """(run seed, the case's model's output, the chapter model's) for each batch of 2 or more
    rows of every case of `kind` that 7.6's builder draws in 20 runs; each run holds one."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).eval()
    program = torch.export.export(model, (torch.randn(3, 4),))
    package = tmp_path / "tiny.pt2"
    package.write_bytes(b"")  # copied, never loaded here
    builder = export_cases_late.package_cases(str(tmp_path / "cases"), program, str(package), model)
    for run_seed, drawn in runs(builder, 6, 20):
        of_kind = [case for case in drawn if case[3] == kind]
        assert of_kind, run_seed
        for _path, changed, batches, *_kind in of_kind:
            for rows in (rows for rows in batches if rows >= 2):
                x = torch.randn(rows, 4)
                with torch.no_grad():
                    yield run_seed, changed(x), model(x)


def test_7_6_other_weights_differ_within_a_lenient_tolerance_in_every_run(tmp_path):
    """The red team's (redV) "same" for outputs within atol=1 passed half the runs: the first
    bias moved by 0.5 to 1.5. Moved by 0.01 to 0.03, the outputs differ beyond rounding (the
    reference's allclose says so) and within atol=1 (that answer says "same": refused)."""
    for run_seed, changed, original in outputs_of_kind(tmp_path, "other weights"):
        assert not torch.allclose(changed, original), run_seed
        assert torch.allclose(changed, original, atol=1.0), run_seed


def test_7_6_outputs_that_differ_keep_the_first_row_in_every_run(tmp_path):
    """The red team (redF2): comparing the first row of each output passed seeds 1-6, since the
    first bias moved every row. The case's outputs now differ after the first row only."""
    for run_seed, changed, original in outputs_of_kind(tmp_path, "other weights"):
        assert torch.equal(changed[:1], original[:1]), run_seed
        assert not torch.allclose(changed[1:], original[1:]), run_seed


def test_7_6_outputs_off_by_rounding_tell_an_exact_comparison_in_every_run(tmp_path):
    """The red team's (redV) "same" by torch.equal passed: the package computes eager's outputs
    bit for bit. A model whose outputs are a few units in the last place off is "same" for the
    reference's allclose and for assert_close, and "differs" for torch.equal."""
    for run_seed, changed, original in outputs_of_kind(tmp_path, "rounding"):
        assert torch.allclose(changed, original), run_seed
        torch.testing.assert_close(changed, original)
        assert not torch.equal(changed, original), run_seed


def test_7_6_outputs_with_rows_moved_keep_every_summary_in_every_run(tmp_path):
    """The red team (redL4): "same" when the means, the sums or the sorted values agree passed
    every run. Every run now holds a model whose rows after the first are rolled by one: the
    same values in other places, which the reference's allclose tells apart."""
    moved_runs = set()
    for run_seed, changed, original in outputs_of_kind(tmp_path, "rows moved"):
        if len(changed) < 3:  # one row after the first: rolled onto itself
            assert torch.equal(changed, original), run_seed
            continue
        moved_runs.add(run_seed)
        assert not torch.allclose(changed, original), run_seed
        assert torch.allclose(changed.mean(), original.mean(), atol=1e-6), run_seed
        assert torch.allclose(changed.sum(), original.sum(), atol=1e-4), run_seed
        assert torch.equal(changed.flatten().sort().values, original.flatten().sort().values)
    assert len(moved_runs) == 20, moved_runs


def test_checkpoint_7_3_tells_buffers_named_by_their_placeholders(monkeypatch):
    """Every write found, in the right form, but each buffer named by its placeholder (b_...):
    the message asked "which form lists them?" (tester honW); it names the placeholder now."""
    from fxcourse import tryit

    def written_state(program):
        signature = program.run_decompositions().graph_signature
        buffers = signature.buffers_to_mutate.values()
        placeholders = [p for p, b in signature.inputs_to_buffers.items() if b in buffers]
        return sorted([*placeholders, *signature.user_inputs_to_mutate.values()])

    namespace = {"__name__": "chapter", "torch": torch, "nn": nn, "written_state": written_state}
    namespace["checkpoint"] = tryit.checkpoint
    check = check_cells.check_source("07_torch_export", "7.3")
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "is a placeholder's name" in result.problem, result.problem
    assert result.problem.startswith("b_"), result.problem


def real_code_on_fakes(x: torch.Tensor, k: int) -> torch.Tensor:  # the red team's (redY)
    return x.unfold(-1, k, 1).amax(dim=-1)  # the real kernel's code: no length worked out


def empty_of_a_slice(x: torch.Tensor, k: int) -> torch.Tensor:  # honest: a length by slicing
    return torch.empty_like(x[..., k - 1 :], memory_format=torch.contiguous_format)


@pytest.mark.parametrize("fake", [real_code_on_fakes, empty_of_a_slice])
def test_checkpoint_7_4_refuses_a_fake_kernel_that_computes_the_result(monkeypatch, fake):
    """A fake kernel that runs the real kernel's code on fake tensors passed: the shape comes out
    right without being worked out. The fake kernel's ATen operators are traced (make_fx): making,
    viewing or copying a tensor computes nothing, an amax does."""
    problem = judged_with_fake(fake, monkeypatch)
    if fake is real_code_on_fakes:
        assert problem and "computes the result (aten.amax.default)" in problem, problem
    else:
        assert problem is None, problem


def test_7_5_a_getitem_listed_or_not_is_the_same_answer():
    """The red team (redQ): "every ATen operator call" read as call_function nodes lists the
    getitem that picks aten.sort's values; read as ATen operators, it does not. Both are right
    (the prompt says so), and the drawn layers now include a sort, so both are met."""
    model = nn.Sequential(nn.Linear(4, 4), export_cases_late.Sorted())
    program = torch.export.export(model, (torch.randn(2, 4),))

    def listed(keep):
        def walk(module) -> list[str]:
            found = []
            for node in getattr(module, "graph", SimpleNamespace(nodes=[])).nodes:
                if node.op == "call_function" and keep(node):
                    found.append(str(node.target))
                elif node.op == "call_module":
                    found += walk(module.get_submodule(node.target))
            return found

        def ops_inside(program, path):
            return sorted(walk(torch.export.unflatten(program).get_submodule(path)))

        return SimpleNamespace(ops_inside=ops_inside)

    ask = export_cases_late.ops_of_paths(program, ["", "1"])
    every_call = ask(listed(lambda node: True))
    aten_only = ask(listed(lambda node: isinstance(node.target, torch._ops.OpOverload)))
    assert every_call == aten_only, (every_call, aten_only)
    assert every_call[0]["1"] == ["aten.sort.default"], every_call
