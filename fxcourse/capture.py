"""Watch torch.compile and torch.export at work from a notebook: their logs and Inductor's code.

    with torch_logs(guards=True, recompiles=True) as logs:
        compiled(x)
    print(logs.text("recompiles"))

`torch_logs` is the in-notebook twin of the TORCH_LOGS environment variable (TORCH_LOGS=
"guards,recompiles" before starting Python). It turns the named logs and artifacts on with
`torch._logging.set_logs` (a documented function in a private module), collects every record
torch logs into `logs` instead of stderr, and on leaving puts torch's log settings and handlers
back as they were, so no later cell keeps printing.
`logs.shape_events()` splits the `dynamic` log's symbol and guard lines into their parts
(`ShapeEvent`); `logs.guards_added()` keeps the guards' expressions.

`inductor_code(fn, *args)` compiles `fn` with the default backend (Inductor) in a temporary
cache folder, runs it once and returns the Python module Inductor generated (its C++ kernel
inside), or None when no C++ compiler is installed. It uses private torch helpers
(torch._inductor's cache-folder switch and compiler search), kept here so the chapter does not.

`native_stderr()` collects what compiled code writes straight to the process's stderr (file
descriptor 2), which `contextlib.redirect_stderr` cannot catch: AOTInductor's runtime prints each
error there before raising it.

`structured_trace(log_file)` is the in-notebook twin of TORCH_TRACE (read only when torch starts):
for the block, every structured record torch.compile writes goes into `log_file`, which
`tlparse(log_file, folder)` turns into tlparse's HTML report and reads back as a `TlparseReport`
(compile ids, the function each compiled, its artifacts and recompile reasons).

`what_each_call_compiled(fn, batches)` is checkpoint 10.1's measurement: for each call of `fn`
compiled with `dynamic=None`, "reuse", "static" or "symbolic" (as `MeasuredWord`s, so that a
pasted measurement can be told from a written word).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch

TORCH_LOGS_IS_SET = (
    "TORCH_LOGS is set in the environment ({value!r}); it takes precedence over torch_logs(...), "
    "so this capture shows what TORCH_LOGS turned on."
)
NO_OUTPUT_CODE = (
    "Inductor compiled, but its output_code log was not captured (notes: {notes}). If TORCH_LOGS "
    "is set, add output_code to it or unset it before starting Jupyter."
)


@dataclass
class LogCapture:
    """The records torch logged inside a `torch_logs` block, as (source, message) pairs; the source
    is the artifact's name ("guards", "recompiles", ...) or else the logger's name."""

    records: list[tuple[str, str]] = field(default_factory=list)

    def text(self, *sources: str) -> str:
        """The messages from the given sources (all when none is given), one after another."""
        return "\n".join(m for s, m in self.records if not sources or s in sources)

    def sources(self) -> list[str]:
        return sorted({source for source, _ in self.records})

    def shape_events(self) -> list[ShapeEvent]:
        """The `dynamic` log's symbols created and guards added, each with the line behind it."""
        found = (_SHAPE_EVENT.match(line) for line in self.text().splitlines())
        return [ShapeEvent(*match.groups()) for match in found if match]

    def guards_added(self) -> list[str]:
        """The expressions of the `dynamic` log's guards, in the order they were added."""
        return [
            event.what[len("eval ") : -len(" [guard added]")]
            for event in self.shape_events()
            if event.what.endswith("[guard added]")
        ]

    def __repr__(self) -> str:
        return self.text() or "(nothing was logged)"


# "eval s77 <= 8 [guard added] if x.shape[0] > 8:  # f.py:5 in pick_rows (_dynamo/variables/
# tensor.py:2849 in evaluate_expr), for more info ..."; a create_symbol line's first part ends in
# "int_oo]". The user's code is missing when Python has no source for it (stdin).
_SHAPE_EVENT = re.compile(r"(.*?(?:\[guard added\]|int_oo\])) ?(.*?)  # (\S+) in (\w+) \((.*?)\)")


class ShapeEvent(NamedTuple):
    """One line of the `dynamic` log: what happened, the user's code that caused it, where that
    code is (file:line), the user function it is in, and the torch function that made it."""

    what: str
    code: str
    location: str
    function: str
    inside_torch: str


class _Collector(logging.Handler):
    def __init__(self, capture: LogCapture):
        super().__init__(logging.DEBUG)
        self.capture = capture
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        # Artifact loggers are named "<module>.__<artifact>", e.g. torch._dynamo.guards.__guards.
        source = record.name.rpartition(".__")[2] if ".__" in record.name else record.name
        self.capture.records.append((source, self.format(record)))


@contextlib.contextmanager
def torch_logs(**settings: bool | int) -> Iterator[LogCapture]:
    """Turn on torch logs (the keyword arguments of torch._logging.set_logs, e.g. guards=True,
    dynamo=logging.INFO) for the block, collecting what they print; restore everything after."""
    from torch._logging import _internal

    saved_state = copy.deepcopy(_internal._get_log_state())
    capture = LogCapture()
    collector = _Collector(capture)
    loggers: list[logging.Logger] = []
    try:
        if value := os.environ.get(_internal.LOG_ENV_VAR):
            capture.records.append(("note", TORCH_LOGS_IS_SET.format(value=value)))
        else:
            torch._logging.set_logs(**settings)  # an unknown name raises TypeError here
        loggers = [logging.getLogger(name) for name in _internal.log_registry.get_log_qnames()]
        for logger in loggers:
            _internal._clear_handlers(logger)  # torch's own stderr handlers; set back below
            logger.addHandler(collector)
        yield capture
    finally:
        for logger in loggers:
            logger.removeHandler(collector)
        _internal._set_log_state(saved_state)
        _internal._init_logs()


def unprofiled_guards():
    """Compile without Dynamo's guard-latency measurement, which flushes the CPU cache first
    (`profile_guard_manager` in torch/_dynamo/guards.py: "This cache flush is expensive") and
    only feeds a debug log line and a metric: a fifth of a small compile (the checkpoints of
    chapters 6 and 10 compile often)."""
    from unittest import mock

    import torch._dynamo.guards as guards  # private

    return mock.patch.object(guards, "profile_guard_manager", lambda *args: 0.0)


def cxx_compiler() -> str | None:
    """The C++ compiler Inductor would use on this machine (its own search), or None."""
    # Importing Inductor and searching create its cache folder and record it in an environment
    # variable (TORCHINDUCTOR_CACHE_DIR), which would then outlive this call.
    with _environment_variable("TORCHINDUCTOR_CACHE_DIR"):
        from torch._inductor import cpp_builder, exc

        try:
            return cpp_builder.get_cpp_compiler()
        except (exc.InvalidCxxCompiler, OSError, RuntimeError):
            return None


@dataclass
class InductorCode:
    """What Inductor generated for one function: the Python module text (C++ kernels inside),
    the seconds that compiling and the first call took, and that call's result."""

    module: str
    seconds: float
    result: object

    def kernels(self) -> str:
        """Only the C++ source of the generated kernels."""
        lines, inside = [], False
        for line in self.module.splitlines():
            if line.startswith("#include"):  # a kernel's C++ source starts
                inside = True
            elif inside and line.startswith("'''"):  # and ends with its Python string
                inside = False
                lines.append("")
            if inside:
                lines.append(line)
        return "\n".join(lines).strip()

    def call_function(self) -> str:
        """The generated Python `call` that allocates buffers and launches the kernels."""
        lines = self.module.splitlines()
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("def call("))
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = next(
            (i for i in range(start + 1, len(lines)) if _dedents(lines[i], indent)), len(lines)
        )
        return "\n".join(line[indent:] for line in lines[start:end]).rstrip()


def _dedents(line: str, indent: int) -> bool:
    return bool(line.strip()) and len(line) - len(line.lstrip()) <= indent


@contextlib.contextmanager
def _environment_variable(name: str, value: str | None = None) -> Iterator[None]:
    """Set `name` to `value` (when given) for the block; afterwards it is as it was before."""
    before = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def inductor_code(fn, *args) -> InductorCode | None:
    """Compile `fn` with Inductor in a throw-away cache folder and call it once on `args`.

    Returns None, compiling nothing, when no C++ compiler is installed. TORCHINDUCTOR_CACHE_DIR
    (Inductor's documented cache setting) points at a temporary folder that is deleted after,
    so nothing is cached between runs and nothing is written into the course's folders. One
    compile thread, so no pool of worker processes outlives the call; no precompiled headers
    (Inductor would keep them, some 300 MB, in its default cache folder). Dynamo's cache is
    emptied before and after (torch.compiler.reset()).
    """
    # Importing parts of Inductor records its default cache folder in TORCHINDUCTOR_CACHE_DIR;
    # the outer block puts the variable back as it was.
    with _environment_variable("TORCHINDUCTOR_CACHE_DIR"):
        if cxx_compiler() is None:
            return None
        return _compile_in_temporary_cache(fn, args)


def _compile_in_temporary_cache(fn, args) -> InductorCode:
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    with (
        tempfile.TemporaryDirectory(prefix="fxcourse-inductor-") as cache,
        temporary_cache_dir(cache),
        torch._inductor.config.patch(compile_threads=1, cpp_cache_precompile_headers=False),
        torch_logs(output_code=True) as logs,
    ):
        torch.compiler.reset()
        start = time.perf_counter()
        result = torch.compile(fn)(*args)
        seconds = time.perf_counter() - start
        torch.compiler.reset()
    _, _, module = logs.text("output_code").partition("\n")  # after its "Output code:" line
    if not module:
        raise RuntimeError(NO_OUTPUT_CODE.format(notes=logs.text("note") or "none"))
    return InductorCode(module, seconds, result)


@contextlib.contextmanager
def native_stderr() -> Iterator[LogCapture]:
    """Collect what is written to file descriptor 2 during the block (C++ code's `std::cerr`)
    instead of showing it; afterwards the descriptor is the one it was, and the text is in the
    capture under the source "stderr"."""
    capture = LogCapture()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield capture
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            if text := sink.read().decode(errors="replace").strip():
                capture.records.append(("stderr", text))


class MeasuredWord(str):
    """A word `what_each_call_compiled` measured rather than a learner predicted."""


def what_each_call_compiled(fn, batches, width: int = 3) -> list[MeasuredWord]:
    """For each call of `fn` on a (batch, width) tensor, compiled with dynamic=None from an empty
    cache: "reuse" (an existing graph ran), "static" or "symbolic" (the batch of the new graph)."""
    torch.compiler.reset()
    graphs = []

    def count_graphs(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(fn, backend=count_graphs)
    found = []
    for batch in batches:
        before = len(graphs)
        compiled(torch.randn(batch, width))
        if len(graphs) == before:
            found.append(MeasuredWord("reuse"))
            continue
        size = graphs[-1].graph.find_nodes(op="placeholder")[-1].meta["example_value"].shape[0]
        found.append(MeasuredWord("static" if isinstance(size, int) else "symbolic"))
    return found


@contextlib.contextmanager
def structured_trace(log_file: str | os.PathLike) -> Iterator[Path]:
    """Write torch's structured trace (what TORCH_TRACE=folder records) into `log_file` for the
    block. It adds a handler to torch's trace logger ("torch.__trace", torch/_logging/_internal.py)
    with torch's own trace format, and first repeats the file names interned before the block, so
    that stacks in the log name their files. Compile ids count from 0 after
    `torch.compiler.reset()`."""
    from torch._logging._internal import TorchLogsFormatter, trace_log, trace_structured
    from torch._logging.structured import INTERN_TABLE

    path = Path(log_file)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(TorchLogsFormatter(trace=True))
    trace_log.addHandler(handler)
    try:
        for text, number in list(INTERN_TABLE.items()):
            trace_structured("str", lambda t=text, n=number: (t, n), suppress_context=True)
        yield path
    finally:
        trace_log.removeHandler(handler)
        handler.close()


def tlparse_program() -> str:
    """The tlparse executable installed with the course (beside this Python), or on PATH."""
    beside = Path(sys.executable).with_name("tlparse")
    found = str(beside) if beside.exists() else shutil.which("tlparse")
    if found is None:
        raise FileNotFoundError("tlparse is not installed: pip install tlparse")
    return found


def tlparse(log_file: str | os.PathLike, folder: str | os.PathLike) -> TlparseReport:
    """Run tlparse on one trace log, writing its HTML report into `folder` (replaced)."""
    command = [tlparse_program(), str(log_file), "-o", str(folder), "--overwrite", "--no-browser"]
    subprocess.run(command, capture_output=True, text=True, check=True)
    return TlparseReport(Path(folder))


@dataclass
class TlparseReport:
    """A tlparse report folder: index.html, compile_directory.json (each compile id's
    artifacts) and raw.jsonl (the records it read)."""

    folder: Path

    @property
    def index(self) -> Path:
        return self.folder / "index.html"

    def directory(self) -> dict[str, dict]:
        return json.loads((self.folder / "compile_directory.json").read_text(encoding="utf-8"))

    def compile_ids(self) -> list[str]:
        """Compile ids such as "[1/0]" (frame 1, its first compile), in the order they ran."""
        return [key for key in self.directory() if key.startswith("[") and key[1].isdigit()]

    def artifacts(self, compile_id: str) -> list[str]:
        return [item["name"] for item in self.directory()[compile_id]["artifacts"]]

    def artifact(self, compile_id: str, prefix: str) -> str:
        """The text of the compile's first artifact whose name starts with `prefix`."""
        for item in self.directory()[compile_id]["artifacts"]:
            if item["name"].startswith(prefix):
                return (self.folder / item["url"]).read_text(encoding="utf-8")
        raise KeyError(f"{compile_id} has no artifact {prefix}*: {self.artifacts(compile_id)}")

    def recompile_reasons(self, compile_id: str) -> list[str]:
        """The failed guards that made this compile a recompile (empty for a first compile)."""
        if not any(name.startswith("recompile_reasons") for name in self.artifacts(compile_id)):
            return []
        text = self.artifact(compile_id, "recompile_reasons")
        try:
            reasons = json.loads(text)
        except json.JSONDecodeError:
            reasons = text
        return [reasons] if isinstance(reasons, str) else list(reasons)

    def function_names(self) -> dict[str, str]:
        """Compile id -> the name of the function that compile started from (raw.jsonl's
        dynamo_start records, the innermost frame of their stack)."""
        names = {}
        for line in (self.folder / "raw.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "dynamo_start" in record:
                compile_id = f"[{record['frame_id']}/{record['frame_compile_id']}]"
                names.setdefault(compile_id, record["dynamo_start"]["stack"][-1]["name"])
        return names
