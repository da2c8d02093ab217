"""Plumbing for chapter 9: short views of what Inductor logs and writes, so the chapter's cells
show the compiler's output rather than the text processing that shortens it.

    with debug_matches("sub") as log: ...  # the pattern matcher's debug log, as a list of lines
    show_ir(folder / "ir_post_fusion.txt")  # one line per IR node
    show_skeleton((folder / "output_code.py").read_text())  # the kernel's loops and stores

The readers parse the text files that `TORCH_COMPILE_DEBUG=1` writes (torch/_inductor/debug.py);
a torch upgrade that changes their layout breaks them loudly (tests/test_inductor_view.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

# loop-body operations that only move data; the rest (exp, sub, a reduction's kind) is the math
DATA_MOVES = {"load", "store", "store_reduction", "get_index", "constant", "index_expr"}
MATCH_DEBUG = "TORCHINDUCTOR_PATTERN_MATCH_DEBUG"


@contextlib.contextmanager
def debug_matches(node_names: str) -> Iterator[list[str]]:
    """Set TORCHINDUCTOR_PATTERN_MATCH_DEBUG for the block; yields the matcher's log lines."""
    lines, logger = [], logging.getLogger("torch._inductor.pattern_matcher")
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger.addHandler(handler)
    logger.propagate, saved_propagate = False, logger.propagate  # not to stderr as well
    saved_value = os.environ.get(MATCH_DEBUG)
    os.environ[MATCH_DEBUG] = node_names
    try:
        yield lines
    finally:
        if saved_value is None:
            del os.environ[MATCH_DEBUG]
        else:
            os.environ[MATCH_DEBUG] = saved_value
        logger.removeHandler(handler)
        logger.propagate = saved_propagate


def ir_lines(ir_text: str) -> list[str]:
    """One line per node of an ir_pre_fusion.txt or ir_post_fusion.txt: its name and kind, or the
    buffer it writes, its shape and the math of its loop body; a fused node's members indented."""
    blocks = re.split(r"\n(?=op\w+: )", ir_text)
    lines = []
    for before, block in zip([""] + blocks, blocks, strict=False):  # each block, the one before
        name, kind = re.match(r"(op\w+): (\w+)", block).groups()
        indent = "    " if before.rstrip().endswith("=") else ""  # "opX.snodes[i] =" came before
        if kind != "SchedulerNode":  # a fused node; its members follow, one block each
            lines.append(f"{indent}{name}: {kind}")
            continue
        buffer = re.search(r"writes = \[MemoryDep\('(\w+)'", block).group(1)
        size = re.search(rf"{buffer}\.layout = .*?size=(\[[^\]]*\])", block).group(1)
        ops = [op for op in re.findall(r"ops\.(\w+)\(", block) if op not in DATA_MOVES]
        ops += re.findall(r"ops\.reduction\([^']*'(\w+)'", block)  # which reduction
        lines.append(f"{indent}{name}: {buffer} {size:8} {' '.join(ops)}")
    return lines


def skeleton_lines(output_code: str) -> list[str]:
    """The first kernel's loops and stores, each indented once per loop around it; then `call`."""
    kernel_source = re.search(r"r'{3}\n(.*?)'{3}", output_code, flags=re.S).group(1)
    lines, depth, loops = [], 0, []  # brace depth, and the depth at which each open loop began
    for line in kernel_source.splitlines():
        code = line.strip()
        if "for(" in code or re.search(r"^out_ptr\d+\[.*\] =|store\(out_ptr", code):
            kept = re.sub(r"static_cast<\w+>\(([^()]*)\)", r"\1", code).replace("int64_t ", "")
            lines.append(("    " * len(loops) + kept)[:100])
            if "for(" in code:
                loops.append(depth)
        depth += code.count("{") - code.count("}")
        while loops and code.count("}") > code.count("{") and loops[-1] >= depth:
            loops.pop()  # that loop's body has closed
    call = re.search(r"    def call\(self, args\):.*?return [^\n]*", output_code, flags=re.S)
    return lines + call[0].splitlines()


def show_ir(path: Path) -> None:
    print("\n".join(ir_lines(Path(path).read_text())))


def show_skeleton(output_code: str) -> None:
    print("\n".join(skeleton_lines(output_code)))
