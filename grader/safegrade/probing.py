"""What instructors' probes and checks use, on both sides of the boundary (README.md, "Writing
an exercise"). The trusted side makes each test's inputs and checks what comes back; a probe,
beside the learner's code, calls the learner's code on the inputs and returns data. Graphs cross
as descriptions (graph_data.py). Never imports nbgrader, nor torch unless a probe or check does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path

# ----------------------------------------------------------------------------- loading


def load(path: str | Path):
    """The module in the file at path, imported once per process under a name of its own."""
    path = Path(path).resolve()
    name = "safegrade_" + hashlib.sha256(str(path).encode()).hexdigest()[:16] + "_" + path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def sibling(file: str, stem: str):
    """The module <stem>.py beside `file`."""
    return load(Path(file).resolve().with_name(f"{stem}.py"))


@contextmanager
def torch_defaults():
    """torch's global settings as a fresh process has them (float32, gradients on, no inference
    mode, one thread), restored afterwards: what a submission set does not change a verdict.
    Nothing to do where torch was never imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    saved = torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads()
    with ExitStack() as stack:
        torch.set_default_dtype(torch.float32)
        torch.set_num_threads(1)
        stack.enter_context(torch.inference_mode(False))
        stack.enter_context(torch.enable_grad())
        try:
            yield
        finally:
            torch.set_default_dtype(saved[0])
            torch.set_num_threads(saved[2])


def call_probe(probes, grade_id: str, namespace: dict, inputs):
    """Run one probe on its inputs under torch's defaults; warnings are recorded, never raised
    or printed (they never cost points)."""
    probe = getattr(probes, grade_id, None)
    if probe is None:
        from .wording import _

        raise LookupError(_("probes.py has no probe for {name}").format(name=repr(grade_id)))
    with warnings.catch_warnings(record=True), torch_defaults():
        warnings.simplefilter("always")
        return probe(namespace, inputs)


def learner(namespace: dict, name: str):
    """The learner's definition of `name`, or a clear NameError."""
    if name not in namespace:
        from .wording import _

        raise NameError(_("{name} is not defined: run the cell that defines it").format(name=name))
    return namespace[name]


def describe(gm, vocabulary, state: bool = False) -> dict:
    """graph_data.describe (imports torch): gm as data, named through the exercise's vocabulary."""
    from .graph_data import describe

    return describe(gm, vocabulary, state)


# ----------------------------------------------------------------------------- checks


def make_inputs(checks, grade_id: str, seed: int):
    """checks.inputs(grade_id, seed): the test's inputs, made on the trusted side."""
    maker = getattr(checks, "inputs", None)
    if maker is None:
        raise LookupError("checks.py has no inputs(grade_id, seed)")
    return maker(grade_id, seed)


def run_check_function(checks, grade_id: str, data, inputs) -> None:
    """checks.<grade_id>(data, inputs)."""
    check = getattr(checks, grade_id, None)
    if check is None:
        raise LookupError(f"checks.py has no check for {grade_id!r}")
    check(data, inputs)
