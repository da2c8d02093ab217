"""Progress (`make progress`, the hub's progress page): what the checks last said, and when."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_output
from test_workspace import _open_and_run, _three_chapters, _write_chapter

from fxcourse import languages, progress, results, tryit, workspace

ROOT = Path(__file__).resolve().parents[1]


def test_progress_reads_passed_checkpoints_and_exercise_tests_from_saved_notebooks(
    tmp_path, capsys
):
    mine = tmp_path / "ws"
    workspace.sync(mine, ROOT, exchange=tmp_path / "exchange")
    chapter = mine / "01_symbolic_tracing.ipynb"
    notebook = nbformat.read(chapter, as_version=4)
    checks = [cell for cell in notebook.cells if progress.CHECKPOINT.search(cell.source)]
    first_id = progress.CHECKPOINT.search(checks[0].source).group(1)
    checks[0].outputs = [
        new_output("execute_result", {"text/plain": f"Checkpoint {first_id} passed."})
    ]
    nbformat.write(notebook, chapter)
    exercise = next(name for name in workspace.course_notebooks(ROOT) if "exercises/" in name)
    notebook = nbformat.read(mine / exercise, as_version=4)
    for count, cell in enumerate(notebook.cells, 1):
        cell.execution_count = count if cell.cell_type == "code" else None
    fetched = mine / Path(exercise).stem / Path(exercise).name  # the submitted copy wins
    fetched.parent.mkdir()
    nbformat.write(notebook, fetched)

    assert progress.main([str(mine)]) == 0
    shown = capsys.readouterr().out
    assert f"01_symbolic_tracing.ipynb: 1/{len(checks)} try-its passed  {first_id}✓" in shown
    assert f"{Path(exercise).stem}: passed ({Path(exercise).stem}/" in shown
    assert progress.main(["--json", str(mine)]) == 0  # what the hub's progress page reads
    claim = json.loads(capsys.readouterr().out)
    assert claim["tryits"]["01_symbolic_tracing.ipynb"][first_id] is True
    assert claim["exercises"][Path(exercise).stem][0] == "passed"
    (mine / "02_fx_ir.ipynb").write_text("not a notebook")
    assert progress.main(["--json", str(mine)]) == 0  # the learner's own file: said, not read
    claim = json.loads(capsys.readouterr().out)
    assert claim["tryits"]["02_fx_ir.ipynb"] is None and "02_fx_ir.ipynb" not in claim["as_of"]
    (mine / "03_graph_transforms.ipynb").unlink()
    (mine / "03_graph_transforms.ipynb").symlink_to(chapter)  # a link: read, never dated
    claim = progress.progress(mine)
    assert (
        claim["tryits"]["03_graph_transforms.ipynb"]
        and "03_graph_transforms.ipynb" not in (claim["as_of"])
    )
    assert progress.main([str(mine)]) == 0
    assert "02_fx_ir.ipynb: not readable as a notebook" in capsys.readouterr().out
    assert progress.main([str(tmp_path / "nowhere")]) == 2


def test_progress_dates_only_what_the_learner_saved_or_checked(tmp_path, monkeypatch, capsys):
    """A chapter never opened shows no "[notebook saved ...]": its file's time is only when the
    sync copied it (first copy, an update, an earlier sync's copy); one the learner saved does."""
    course, mine = _three_chapters(tmp_path, "checkpoint('{number}.1', 'x')")
    chapters = course / "chapters"
    monkeypatch.setattr(progress, "course_notebooks", lambda: workspace.course_notebooks(course))
    assert progress.progress(mine)["as_of"] == {}
    _open_and_run(mine / "02_b.ipynb")  # the lab saved it
    _write_chapter(chapters, "03_c.ipynb", "checkpoint('3.1', 'x')", "# new in the course")
    assert workspace.sync(mine, course).updated == ["03_c.ipynb"]  # rewritten by the sync
    found = progress.progress(mine)["as_of"]
    assert list(found) == ["02_b.ipynb"] and found["02_b.ipynb"][0] == "notebook saved", found
    progress.main([str(mine)])
    shown = capsys.readouterr().out.splitlines()
    assert [line for line in shown if "[notebook saved" in line] == [
        line for line in shown if line.startswith("  02_b.ipynb")
    ], shown

    earlier = tmp_path / "earlier"  # a workspace of an earlier sync: only its digests are known
    shutil.copytree(chapters, earlier, ignore=shutil.ignore_patterns("exercises"))
    digests = {n: hashlib.sha256((earlier / n).read_bytes()).hexdigest() for n in ("01_a.ipynb",)}
    (earlier / workspace.LEGACY_MANIFEST).write_text(json.dumps(digests))
    assert list(progress.progress(earlier)["as_of"]) == ["02_b.ipynb", "03_c.ipynb"]


class _CellRun:
    """What IPython hands a post_run_cell callback: the cell's text and whether it succeeded."""

    def __init__(self, source: str, success: bool):
        self.info = type("Info", (), {"raw_cell": source})()
        self.success = success


def test_progress_reads_the_copy_fetched_in_the_workspaces_language(tmp_path):
    """A Chinese learner fetches <exercise>-zh (grader/exercises.py): that copy is the one read."""
    mine = tmp_path / "ws"
    workspace.sync(mine, ROOT, "zh", exchange=tmp_path / "exchange")
    exercise = next(n for n in workspace.course_notebooks(ROOT, "zh") if "exercises/" in n)
    stem = Path(exercise).stem
    fetched = mine / f"{stem}-zh" / f"{stem}-zh.ipynb"
    assert progress.progress(mine)["exercises"][stem][1] == exercise
    fetched.parent.mkdir()
    shutil.copy(mine / exercise, fetched)
    assert progress.progress(mine)["exercises"][stem][1] == str(fetched.relative_to(mine))


def test_progress_follows_the_checks_last_run_not_the_saved_outputs(tmp_path, monkeypatch, capsys):
    """A checkpoint that passes and a Validate run whose test cells all pass count at once,
    though the saved notebooks still show the last Run All's failures; a later failing run
    counts too; records that are not the course's are ignored."""
    mine = tmp_path / "ws"
    workspace.sync(mine, ROOT, exchange=tmp_path / "exchange")
    chapter = nbformat.read(mine / "01_symbolic_tracing.ipynb", as_version=4)
    first_id = progress.CHECKPOINT.search(
        next(c.source for c in chapter.cells if progress.CHECKPOINT.search(c.source))
    ).group(1)
    exercise = next(name for name in workspace.course_notebooks(ROOT) if "exercises/" in name)
    assignment, notebook = Path(exercise).stem, nbformat.read(mine / exercise, as_version=4)
    tests = progress.test_cells(notebook)
    for count, cell in enumerate(tests, 1):  # the last Run All, saved: the first test failed
        cell.execution_count = count
    tests[0].outputs = [new_output("error", ename="AssertionError", evalue="no", traceback=[])]
    nbformat.write(notebook, mine / exercise)
    assert progress.progress(mine)["exercises"][assignment][0] == "failing"

    monkeypatch.chdir(mine)
    with tryit.checkpoint(first_id, "the goal") as check:
        check(True, "never shown")
    monkeypatch.chdir(mine / Path(exercise).parent)  # where Validate's kernel runs the notebook
    recorder = results.CellRecorder(mine / results.RESULTS / f"{Path(exercise).parent}.json")
    for cell in tests:
        recorder(_CellRun(cell.source, success=True))
    assert progress.main([str(mine)]) == 0
    shown = capsys.readouterr().out
    assert "01_symbolic_tracing.ipynb: 1/" in shown and f"{first_id}✓" in shown, shown
    assert f"{assignment}: passed ({exercise})  [checks ran " in shown, shown
    claim = progress.progress(mine)
    assert claim["as_of"][assignment][0] == "checks ran"
    assert "02_fx_ir.ipynb" not in claim["as_of"]  # never saved: no date (the sync's is not)

    recorder(_CellRun(tests[-1].source, success=False))
    assert progress.progress(mine)["exercises"][assignment][0] == "failing"
    (mine / results.RESULTS / f"tryit-{first_id}.json").write_text('{"passed": "yes"}')
    (mine / results.RESULTS / f"{Path(exercise).parent}.json").write_text("x" * 300_000)
    claim = progress.progress(mine)
    assert claim["tryits"]["01_symbolic_tracing.ipynb"][first_id] is False  # the saved output
    assert claim["exercises"][assignment][0] == "failing"  # the saved outputs again

    outside = tmp_path / "not-a-workspace"
    outside.mkdir()
    results.record_tryit(first_id, True, folder=outside)
    assert not list(outside.rglob("*.json")), "a result recorded outside any workspace"


def test_every_released_verify_records_the_test_cells_and_no_source_repeats_it(tmp_path):
    """The recording is written once (fxcourse.results.RECORDING) at the end of each released
    verify.py, by Generate (make release, the formgrader) and by make chapters's translations;
    an exercise's own verify.py does not hold it."""
    from grader.exercises import RecordingVerify

    sources = sorted(ROOT.glob("solutions/ex*/verify.py"))
    assert sources and not [p for p in sources if "record_cells" in p.read_text()]
    released = sorted(ROOT.glob("chapters/**/exercises/*/verify.py"))
    assert len(released) == len(sources) * (1 + len(languages.translation_codes()))
    assert not [p for p in released if not p.read_text().endswith(results.RECORDING)]
    assert not [p for p in released if p.read_text().count("record_cells()") != 1]

    folder = tmp_path / "release" / "ex9"
    folder.mkdir(parents=True)
    (folder / "verify.py").write_text('"""Checks."""\n\n\ndef check(x):\n    assert x\n')
    hook = RecordingVerify(tmp_path / "release")
    for _ in range(2):  # a second Generate of the same folder adds nothing
        hook(assignment="*", student=".", notebooks=[str(tmp_path / "source/ex9/ex9.ipynb")])
    text = (folder / "verify.py").read_text()
    assert text == f'"""Checks."""\n\n\ndef check(x):\n    assert x\n\n{results.RECORDING}'
    compile(text, "verify.py", "exec")
