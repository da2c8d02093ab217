"""Chapter 9's plumbing reads Inductor's debug files; the fixtures are the forward graph's files
of chapter 9's `scores` as torch 2.14.1 wrote them (TORCH_COMPILE_DEBUG=1, a CPU)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from fxcourse.inductor_view import MATCH_DEBUG, debug_matches, ir_lines, skeleton_lines

FILES = Path(__file__).parent / "data" / "inductor_view"


def test_ir_lines_name_each_buffer_its_shape_and_math():
    assert ir_lines((FILES / "ir_pre_fusion.txt").read_text()) == [
        "op0: buf0 [8, 1]   mul reduction max",
        "op1: buf1 [8, 16]  mul sub exp",
        "op2: buf2 [8, 1]   reduction sum",
        "op3: buf3 []       truediv mul reduction sum",
    ]


def test_ir_lines_indent_the_members_of_a_fused_node():
    lines = ir_lines((FILES / "ir_post_fusion.txt").read_text())
    assert lines[0] == "op0_op1_op2: OuterLoopFusedSchedulerNode"
    assert [line[:8] for line in lines[1:]] == ["    op0:", "    op1:", "    op2:", "op3: buf"]


def test_skeleton_keeps_loops_stores_and_the_wrapper_call():
    lines = skeleton_lines((FILES / "output_code.py.txt").read_text())
    assert lines[0].startswith("for(x0=0L; x0<8L;")
    assert "    out_ptr0[x0] = tmp_acc0;" in lines
    assert not any("tmp_acc0 =" in line and "out_ptr" not in line for line in lines)
    assert lines[-1].strip() == "return (buf3, primals_1, primals_2, buf0, buf2, )"


def test_debug_matches_sets_the_variable_collects_the_log_and_restores_both():
    logger = logging.getLogger("torch._inductor.pattern_matcher")
    before = os.environ.get(MATCH_DEBUG), logger.propagate, list(logger.handlers)
    with debug_matches("sub,add") as log:
        assert os.environ[MATCH_DEBUG] == "sub,add"
        logger.warning("sub: %s", "multiple_users")
    assert log == ["sub: multiple_users"]
    assert (os.environ.get(MATCH_DEBUG), logger.propagate, list(logger.handlers)) == before
