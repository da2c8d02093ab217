"""fxcourse.capture: torch logs collected in a block and restored after; Inductor's code parsed."""

from __future__ import annotations

import logging
import os

import pytest
import torch
from torch._logging import _internal

from fxcourse import capture


def scaled(x, scale):
    return x * scale


@pytest.fixture
def no_torch_logs_env(monkeypatch):
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    yield
    torch._logging.set_logs()  # whatever a test switched on, off again


def _collectors() -> list[logging.Handler]:
    names = _internal.log_registry.get_log_qnames()
    handlers = [h for name in names for h in logging.getLogger(name).handlers]
    return [h for h in handlers if isinstance(h, capture._Collector)]


def test_records_are_collected_and_settings_restored(no_torch_logs_env, capsys):
    torch._logging.set_logs(graph_breaks=True)  # a setting made before the block
    torch.compiler.reset()
    compiled = torch.compile(scaled, backend="eager")
    compiled(torch.ones(2), 2.0)
    with capture.torch_logs(recompiles=True) as logs:
        compiled(torch.ones(2), 3.0)
    assert "scale == 2.0" in logs.text("recompiles")
    assert logs.sources() == ["recompiles"]
    assert "Recompiling" not in capsys.readouterr().err  # collected, not printed
    assert not _collectors()
    state = _internal._get_log_state()
    assert state.is_artifact_enabled("graph_breaks")
    assert not state.is_artifact_enabled("recompiles")


def test_an_unknown_log_name_is_refused_and_earlier_settings_survive(no_torch_logs_env):
    torch._logging.set_logs(recompiles=True)
    with pytest.raises(TypeError, match="guard"):
        with capture.torch_logs(guard=True):
            pass
    assert _internal._get_log_state().is_artifact_enabled("recompiles")
    assert not _collectors()


def test_an_empty_block_collects_warnings_instead_of_printing_them(no_torch_logs_env, capsys):
    with capture.torch_logs() as logs:
        logging.getLogger("torch._dynamo").warning("something to know")
    assert logs.records == [("torch._dynamo", "something to know")]
    assert "something to know" not in capsys.readouterr().err
    assert repr(capture.LogCapture()) == "(nothing was logged)"


def test_torch_logs_environment_variable_is_reported_not_overridden(monkeypatch):
    monkeypatch.setenv("TORCH_LOGS", "recompiles")
    try:
        with capture.torch_logs(guards=True) as logs:
            pass
        assert logs.records[0][0] == "note" and "'recompiles'" in logs.records[0][1]
    finally:
        monkeypatch.delenv("TORCH_LOGS")
        torch._logging.set_logs()


GENERATED = """
cpp_fused_mul_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)
{
    out_ptr0[0] = in_ptr0[0] * 2;
}
''')


class Runner:
    def call(self, args):
        arg0_1, = args
        buf0 = empty_strided_cpu((1, ), (1, ), torch.float32)
        cpp_fused_mul_0(arg0_1, buf0)
        return (buf0, )

runner = Runner(partitions=[])
"""


def halved_when_long(x):
    if x.shape[0] > 8:
        x = x[: x.shape[0] // 2]
    return x * 2


def test_shape_events_name_each_symbol_and_guard_with_the_line_behind_it(no_torch_logs_env):
    torch.compiler.reset()
    compiled = torch.compile(halved_when_long, backend="eager")
    with capture.torch_logs(dynamic=logging.INFO) as logs:
        for batch in (4, 6, 12):
            compiled(torch.ones(batch, 3))
    events = logs.shape_events()
    assert [e.what.split()[0] for e in events] == ["create_symbol", "eval"] * 2 + ["eval"]
    assert all(
        e.function == "halved_when_long" and "test_capture.py:" in e.location for e in events
    )
    assert events[-1].code == "x = x[: x.shape[0] // 2]"
    assert "_compute_slice_index" in events[-1].inside_torch
    assert logs.guards_added() == ["s77 <= 8", "s77 > 8", "((s77//2)) <= s77"]


def test_shape_events_skip_the_other_lines_of_the_log():
    logs = capture.LogCapture([("dynamic", "create_env"), ("dynamic", "produce_guards")])
    assert logs.shape_events() == [] and logs.guards_added() == []


def test_kernels_and_call_are_cut_out_of_the_generated_module():
    code = capture.InductorCode(GENERATED, 0.0, None)
    assert code.kernels().startswith("#include <torch/csrc/inductor/cpp_prefix.h>")
    assert code.kernels().endswith("}")
    assert "out_ptr0[0] = in_ptr0[0] * 2;" in code.kernels()
    assert code.call_function().splitlines() == [
        "def call(self, args):",
        "    arg0_1, = args",
        "    buf0 = empty_strided_cpu((1, ), (1, ), torch.float32)",
        "    cpp_fused_mul_0(arg0_1, buf0)",
        "    return (buf0, )",
    ]


def test_without_a_compiler_inductor_code_compiles_nothing(monkeypatch):
    monkeypatch.setattr(capture, "cxx_compiler", lambda: None)
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    assert capture.inductor_code(torch.relu, torch.ones(2)) is None
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == before


def test_compiler_search_leaves_the_environment_as_it_was():
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    found = capture.cxx_compiler()
    assert found is None or isinstance(found, str)
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == before


def test_a_missing_output_code_log_is_reported_clearly(monkeypatch, no_torch_logs_env):
    monkeypatch.setattr(capture, "cxx_compiler", lambda: "g++")
    monkeypatch.setattr(torch, "compile", lambda fn: fn)  # runs eagerly: Inductor logs nothing
    with pytest.raises(RuntimeError, match="output_code log was not captured"):
        capture.inductor_code(torch.relu, torch.ones(2))
    assert not _collectors()


def test_native_stderr_collects_what_is_written_to_descriptor_2_and_restores_it():
    before = os.fstat(2)
    with capture.native_stderr() as written:
        os.write(2, b"Error: from C++\n")
    assert written.text("stderr") == "Error: from C++"
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    with pytest.raises(RuntimeError), capture.native_stderr() as written:
        os.write(2, b"then it raised")
        raise RuntimeError
    assert written.text() == "then it raised"
    assert (os.fstat(2).st_dev, os.fstat(2).st_ino) == (before.st_dev, before.st_ino)


def test_what_each_call_compiled_tells_reuse_static_and_symbolic_apart():
    def doubled(x):
        return x * 2

    words = capture.what_each_call_compiled(doubled, (3, 3, 5, 1, 8))
    assert words == ["static", "reuse", "symbolic", "static", "reuse"]
    assert all(isinstance(word, capture.MeasuredWord) for word in words)
    torch.compiler.reset()
