"""A learner whose machine has no C++ compiler (env/setup.sh only warns when g++ is missing).

Chapter 9 compiles with Inductor, which writes C++ on a CPU, and reads the files that compile
leaves behind. Without a compiler, those cells must say so and skip, and the rest of the chapter
(its checkpoints included) must run: a traceback, or a cell failing because an earlier one
skipped, is a failure here. CXX names a compiler that does not exist, which is how Inductor's own
search (torch._inductor.config.cpp.cxx, read when the kernel imports torch) comes up empty.
"""

from __future__ import annotations

import pytest
from notebook_runner import error_outputs, execute

from courseware.repository import HERE

SKIPPED = "Skipped: no C++ compiler found"


def printed(cell) -> str:
    return "".join(output.get("text", "") for output in cell.get("outputs", []))


@pytest.mark.whole_chapter
@pytest.mark.end_to_end  # chapter 9, as the try-it test of chapters 6-12
def test_chapter_9_skips_what_needs_a_cpp_compiler_and_runs_the_rest(
    tmp_path, monkeypatch, record_property
):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    executed, seconds = execute(HERE.chapters / "09_fx_inside_the_compiler.ipynb")
    record_property("notebook_seconds", seconds)
    assert not error_outputs(executed), error_outputs(executed)
    skipped = [index for index, cell in enumerate(executed.cells) if SKIPPED in printed(cell)]
    compiling = [
        index
        for index, cell in enumerate(executed.cells)
        if cell.cell_type == "code" and "if compiles_cpp:" in cell.source
    ]
    assert compiling, "chapter 9 no longer guards its compiles with compiles_cpp"
    assert skipped == compiling, f"cells that said they skipped: {skipped}, guarded: {compiling}"
    assert any("No C++ compiler found" in printed(cell) for cell in executed.cells[:3])
