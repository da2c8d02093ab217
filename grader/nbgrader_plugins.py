"""Two nbgrader preprocessors used by the course configuration (grader/nbgrader_config.py).

ResilientExecute: nbgrader's Execute, except that a kernel that dies (``os._exit``, a crash)
fails the cell it died in and every code cell after it instead of failing the whole submission;
nbgrader then grades the notebook like any other (cells that passed before the crash keep their
points). Endless loops are already handled by nbgrader: the cell times out and is interrupted.

HideHiddenTests: for feedback, removes the hidden tests from the instructor's cells and cuts
their tracebacks down to the error's last line, so learners read the failure message but not the
hidden test code.
"""

from __future__ import annotations

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, Execute, GetGrades
from traitlets import List


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class ResilientExecute(Execute):
    """Execute, grading what ran before a kernel death and failing every code cell from it on."""

    def preprocess(self, nb, resources=None, km=None):
        self._died_in_cell: str | None = None
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._died_in_cell is not None:
            message = f"not run: the kernel died in an earlier cell ({self._died_in_cell})"
            cell.outputs = [_error_output("DeadKernelError", message)]
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            first_line = cell.source.strip().split("\n")[0]
            self._died_in_cell = f"the one that starts {first_line[:60]!r}"
            self.log.warning("The kernel died in cell %d; failing it and every later cell", index)
            cell.outputs.append(_error_output("DeadKernelError", "the kernel died in this cell"))
            return cell, resources


class HideHiddenTests(ClearHiddenTests):
    """ClearHiddenTests for feedback: also shorten graded cells' tracebacks to their last line."""

    # The feedback exporter configures this for every preprocessor (as nbgrader's GetGrades has).
    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default())
    display_data_priority.tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        # Only instructor cells hold hidden tests. A learner's answer may quote the markers, and
        # nbgrader's ClearHiddenTests would then fail the whole feedback run on it.
        if not utils.is_solution(cell):
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if utils.is_grade(cell) and cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
