"""Every numeric limit of the grader, with its unit, in one Configurable (``GradingLimits``).

The six limits on a running submission are configurable: grader/nbgrader_config.py sets them as
``c.GradingLimits.<name>``, and nbgrader (``make autograde``, ``nbgrader autograde``, the
formgrader's button) reads them through ``GradingLimits(config=...)``; a command line can override
them (``--GradingLimits.cell_timeout=30``). The other limits are read from this class's defaults by
the layers that run without nbgrader's configuration: intake (``make collect``), the sandbox's
child (which sees only grader/safegrade/), the reports and the hub's services. They are fixed
(``config=False``): a configured value that one layer read and another did not would make the
layers disagree again. This module lives in safegrade/ because the sandbox's child sees only that
folder; it imports nothing but traitlets.

Where two layers handle the same thing they read the same limit: intake refuses at collect time
what staging would leave out later (files per submission, bytes per file), and the bytes of a
record the child may send are the bytes the grader reads.
"""

from __future__ import annotations

from traitlets import Float, Integer
from traitlets.config import Configurable

MiB = 1 << 20


def _limit(kind, default, unit: str, help: str, config: bool = False):
    """A limit: its unit is one of s, bytes, characters, count; its help text describes it."""
    return kind(default, help=help).tag(config=config, unit=unit)


class GradingLimits(Configurable):
    """The grader's limits. Configurable: the six on a running submission; fixed: the rest."""

    # fmt: off
    # --- a running submission (configurable) -------------------------------------------------
    cell_timeout = _limit(Float, 60.0, "s", config=True, help=(
        "Seconds one cell may run before it is interrupted and fails (also nbgrader's "
        "Execute.timeout on the unsandboxed path). The sandbox has imported torch before the first "
        "cell, so this is compute time only; Validate allows more (fxcourse/validate.py)."
    ))
    budget = _limit(Float, 120.0, "s", config=True, help=(
        "Seconds of wall-clock time for a whole submission in the sandbox, checks included: a "
        "looping submission costs one bounded slot."
    ))
    memory_mb = _limit(Integer, 3072, "MiB", config=True, help=(
        "Memory of a submission beyond the sandbox's own (a memory cgroup where the machine allows "
        "one, counting shared memory, /tmp and page cache; otherwise RLIMIT_AS)."
    ))
    nproc = _limit(Integer, 64, "count", config=True, help=(
        "Processes and threads a submission may run."
    ))
    file_mb = _limit(Integer, 64, "MiB", config=True, help="Largest file a submission may write.")
    tmp_mb = _limit(Integer, 256, "MiB", config=True, help="Size of a submission's own /tmp.")
    # --- intake: uploads and the exchange into submitted/ (grader/intake/) --------------------
    notebook_bytes = _limit(Integer, 256 * MiB, "bytes", help=(
        "Largest notebook taken from an upload, and staged for grading."
    ))
    file_bytes = _limit(Integer, 32 * MiB, "bytes", help=(
        "Largest other file (not a notebook) taken from an upload, and staged for grading."
    ))
    submission_bytes = _limit(Integer, 1024 * MiB, "bytes", help=(
        "All files of one student's submission of one assignment: over it, the submission is "
        "refused whole before anything is copied."
    ))
    submission_files = _limit(Integer, 1000, "count", help=(
        "Files in one submission: over it, intake refuses the submission whole (staging keeps the "
        "same number, so nothing intake takes is dropped later)."
    ))
    zip_bytes = _limit(Integer, 4096 * MiB, "bytes", help=(
        "All files taken from one zip, uncompressed."
    ))
    zip_entries = _limit(Integer, 50_000, "count", help="Entries read from one zip.")
    timestamp_bytes = _limit(Integer, 4096, "bytes", help="Bytes read of a timestamp.txt.")
    clock_slack = _limit(Float, 120.0, "s", help=(
        "How far an exchange submission's timestamp.txt may differ from the change time of its "
        "folder (the copy's duration) before it is reported."
    ))
    # --- staging: the copy of a submission nbgrader reads (safegrade/staging.py) ----------------
    folder_depth = _limit(Integer, 16, "count", help="Folder depth walked in a submission.")
    strip_over_bytes = _limit(Integer, 4 * MiB, "bytes", help=(
        "Notebooks larger than this are graded without their outputs; one still larger without "
        "them is left out (nbgrader parses it under the batch's lock)."
    ))
    notebook_cells = _limit(Integer, 2000, "count", help=(
        "Cells of a notebook nbgrader may read (the exercises have about 40)."
    ))
    notebook_values = _limit(Integer, 20_000, "count", help=(
        "JSON values (and keys) of a notebook nbgrader may read, counted before anything parses "
        "it (an exercise has about 2,000; nbgrader takes about 2 KB of memory per value). Over "
        "it, the notebook is graded without its outputs; still over, it is left out."
    ))
    notebook_scan_values = _limit(Integer, 10_000_000, "count", help=(
        "JSON values of a notebook whose outputs staging cuts out of its bytes (a walk of its "
        "strings and brackets); over it, the notebook is left out."
    ))
    sandbox_files_bytes = _limit(Integer, 32 * MiB, "bytes", help=(
        "All of a submission's other files together, shipped into the sandbox."
    ))
    # --- the sandbox's records (safegrade/worker.py, sandbox.py, records.py) --------------------
    frame_bytes = _limit(Integer, 32 * MiB, "bytes", help=(
        "One encoded record (a probe's data) the child may send; the grader reads no more."
    ))
    records_bytes = _limit(Integer, 64 * MiB, "bytes", help=(
        "Records kept from one submission (two frames' worth)."
    ))
    record_header_bytes = _limit(Integer, 1 * MiB, "bytes", help=(
        "The part of a record the grader parses (its cell, output, error, verdict); the data "
        "after it is forwarded to the check process unparsed."
    ))
    record_header_values = _limit(Integer, 500, "count", help=(
        "JSON values in that part, counted before it is parsed (a record has about 40)."
    ))
    records_text_chars = _limit(Integer, 2_000_000, "characters", help=(
        "Output and error text kept from one submission's records, all cells together."
    ))
    cell_output_chars = _limit(Integer, 20_000, "characters", help=(
        "Output of one cell kept by the child (stdout and stderr each); the grader writes at most "
        "this many (plus a note) into the autograded notebook."
    ))
    fd_output_bytes = _limit(Integer, 80_000, "bytes", help=(
        "What a submission's processes write to their own file descriptors, kept for the log."
    ))
    shm_mb = _limit(Integer, 64, "MiB", help=(
        "Size of a submission's own /dev/shm (counted in its memory cgroup, with tmp_mb)."
    ))
    open_files = _limit(Integer, 256, "count", help="Files a submission's process may hold open.")
    template_tmp_bytes = _limit(Integer, 16 * MiB, "bytes", help=(
        "The sandbox template's own /tmp (each submission mounts its own over it)."
    ))
    template_shm_bytes = _limit(Integer, 1 * MiB, "bytes", help="The template's own /dev/shm.")
    stop_grace = _limit(Float, 60.0, "s", help=(
        "Seconds past budget the grader waits for the template to stop a submission before it "
        "gives the sandbox up."
    ))
    log_lines = _limit(Integer, 10, "count", help="Lines of a sandbox's own stderr kept.")
    log_line_chars = _limit(Integer, 300, "characters", help="Characters per such line.")
    ready_timeout = _limit(Float, 300.0, "s", help=(
        "Seconds a fresh sandbox may take to import torch on a very busy machine."
    ))
    traceback_lines = _limit(Integer, 30, "count", help="Lines of a cell's traceback kept.")
    traceback_line_chars = _limit(Integer, 4000, "characters", help="Characters per such line.")
    name_chars = _limit(Integer, 200, "characters", help=(
        "An exception's type name, and one note on a staged submission."
    ))
    cell_start_chars = _limit(Integer, 60, "characters", help=(
        "A cell's first line, quoted where a message names the cell."
    ))
    check_error_chars = _limit(Integer, 300, "characters", help=(
        "Why the instructor's checks.py failed, in a grader failure's reason."
    ))
    grader_error_chars = _limit(Integer, 500, "characters", help=(
        "The grader's own error sent back by a check process."
    ))
    progress_line_chars = _limit(Integer, 400, "characters", help=(
        "A progress line of make autograde."
    ))
    error_chars = _limit(Integer, 2000, "characters", help=(
        "An error's message, or a check's verdict, in the autograded notebook."
    ))
    # --- probe data the child encodes and the check process decodes (safegrade/data.py) ---------
    data_items = _limit(Integer, 200_000, "count", help="Values in one probe result.")
    data_depth = _limit(Integer, 50, "count", help="Nesting depth of one probe result.")
    tensor_bytes = _limit(Integer, 16 * MiB, "bytes", help="One tensor in a probe result.")
    tensor_dims = _limit(Integer, 16, "count", help="Dimensions of one tensor in a probe result.")
    repr_chars = _limit(Integer, 2000, "characters", help="The repr kept of an opaque value.")
    # the grammar of a graph description a probe sends (safegrade/graph_data.py)
    graph_nodes = _limit(Integer, 500, "count", help="Nodes of one graph description.")
    graph_name_chars = _limit(Integer, 100, "characters", help=(
        "A node's name or a placeholder's target."
    ))
    graph_path_part_chars = _limit(Integer, 64, "characters", help=(
        "One part of a module or tensor path (a.b.c)."
    ))
    graph_path_parts = _limit(Integer, 8, "count", help="Parts of a module or tensor path.")
    graph_text_chars = _limit(Integer, 1000, "characters", help="A string constant in a graph.")
    graph_constants = _limit(Integer, 20_000, "count", help=(
        "Constants in all of a graph's nodes together."
    ))
    graph_nesting = _limit(Integer, 8, "count", help="Nesting of one node's arguments.")
    report_message_chars = _limit(Integer, 300, "characters", help=(
        "A test's failure message as the class report shows it."
    ))
    # --- learners' markup shown to the instructor (grader/learner_html.py) ---------------------
    learner_html_chars = _limit(Integer, 100_000, "characters", help=(
        "A markdown cell, or an output's HTML, rendered and cleaned; a longer one is shown as text."
    ))
    learner_html_tags = _limit(Integer, 2000, "count", help=(
        "Tags of one cell's markup cleaned (bleach's time grows with them); more: shown as text."
    ))
    learner_html_depth = _limit(Integer, 50, "count", help=(
        "Nesting of one cell's tags (bleach's time grows with its square); deeper: as text."
    ))
    learner_html_text_chars = _limit(Integer, 10_000, "characters", help=(
        "Characters shown of such a cell's text (escaped: nbconvert's page parser takes time "
        "with each escaped character)."
    ))
    learner_html_notebook_chars = _limit(Integer, 100_000, "characters", help=(
        "Characters of a notebook's cells and outputs shown on one page, counted escaped; the "
        "rest is cut, with a note (nbconvert's passes over a page take time with its size)."
    ))
    learner_html_time = _limit(Float, 20.0, "s", help=(
        "Seconds spent cleaning one notebook's markup (feedback, the formgrader's views); after "
        "them, its remaining cells are shown as text, their outputs as plain text and images."
    ))
    # --- results, reports and the hub's services -------------------------------------------------
    reason_chars = _limit(Integer, 600, "characters", help=(
        "The one-line reason of a submission's result file and the batch's summary."
    ))
    notes_kept = _limit(Integer, 8, "count", help="Notes on staging kept per submission.")
    similarity_notebook_bytes = _limit(Integer, 32 * MiB, "bytes", help=(
        "Largest submitted notebook the similarity report reads."
    ))
    shown_pairs = _limit(Integer, 30, "count", help=(
        "Pairs per exercise on the similarity page (its CSV has every pair)."
    ))
    progress_output_bytes = _limit(Integer, 256 * 1024, "bytes", help=(
        "What the hub's progress service reads from one learner's progress reader; it stops "
        "reading (and stops the reader) at this size."
    ))
    progress_time = _limit(Float, 60.0, "s", help="Seconds one learner's progress may take.")
    report_time = _limit(Float, 300.0, "s", help=(
        "Seconds the hub's report service may take (a class of hundreds: the gradebook and every "
        "autograded notebook are read)."
    ))
    report_page_bytes = _limit(Integer, 32 * MiB, "bytes", help="The report page served.")
    # fmt: on

    def grading_memory_bytes(self) -> int:
        """The most that what submissions send can add to the grading process's memory, per
        worker: a submission's records and its check process's (records_bytes each; a probe's
        data is never parsed there), the header being parsed (a few times its cap), the text
        kept of the records (4 bytes a character), and nbgrader's copies of two notebooks (the
        one being graded and the next one, staged meanwhile), measured at about 18 bytes per
        byte of a notebook (strip_over_bytes) and 2.2 KB per JSON value (notebook_values)."""
        records = 2 * self.records_bytes + 16 * self.record_header_bytes
        notebook = 18 * self.strip_over_bytes + 2200 * self.notebook_values
        return records + 4 * self.records_text_chars + 2 * notebook

    def file_cap(self, name: str) -> int:
        """The largest file of this name that intake takes and staging keeps."""
        return self.notebook_bytes if name.endswith(".ipynb") else self.file_bytes

    def table(self) -> list[tuple[str, str, str]]:
        """(name, value with unit, "configurable" or "fixed") for every limit, in class order."""
        rows = []
        limits = self.traits(unit=lambda unit: unit is not None)
        for name, trait in ((n, limits[n]) for n in vars(GradingLimits) if n in limits):
            unit, value = trait.metadata["unit"], getattr(self, name)
            shown = f"{value:g}" if isinstance(value, float) else f"{value}"
            if unit == "bytes" and value >= MiB and value % MiB == 0:
                shown, unit = f"{value // MiB}", "MiB"
            kind = "configurable" if trait.metadata.get("config") else "fixed"
            rows.append((name, f"{shown} {unit}" if unit != "count" else shown, kind))
        return rows

    def lines(self, only_configurable: bool = False) -> list[str]:
        """The table as text lines (`python -m grader.safegrade limits` prints them all)."""
        rows = [row for row in self.table() if row[2] == "configurable" or not only_configurable]
        width = max(len(name) for name, _, _ in rows)
        values = max(len(value) for _, value, _ in rows)
        return [f"  {name:<{width}}  {value:>{values}}  {kind}" for name, value, kind in rows]

    def summary(self) -> list[str]:
        """What make autograde prints before grading: the limits on a submission in force."""
        fixed = sum(kind == "fixed" for _, _, kind in self.table())
        return [
            "safegrade: the limits in force (c.GradingLimits.<name> in nbgrader_config.py, or "
            "--GradingLimits.<name>=...):",
            *self.lines(only_configurable=True),
            f"  and {fixed} fixed limits (python -m grader.safegrade limits lists them all)",
            f"safegrade: whatever a submission sends, this process's memory grows by at most "
            f"{self.grading_memory_bytes() // MiB} MiB per worker (records, notebooks at the caps)",
        ]


LIMITS = GradingLimits()  # the defaults, for the layers nbgrader's configuration does not reach
