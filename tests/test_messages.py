"""fxcourse.messages: the language of fxcourse's own messages in a kernel that has not run a
chapter's language cell (`show_answer` in a new notebook of a Chinese lab, a console)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from english_prose import english_sentences

from fxcourse import lab_link, progress, tryit, workspace
from fxcourse.messages import speaking

ROOT = Path(__file__).resolve().parents[1]
SHOW_ANSWER = "from fxcourse.tryit import show_answer; print(repr(show_answer('1.1')))"


def first_line_in(environment: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FXCOURSE_LANGUAGE"}
    python = subprocess.run(
        [sys.executable, "-c", SHOW_ANSWER],
        env={**env, **environment},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return python.stdout.splitlines()[0]


@pytest.mark.parametrize(
    "environment, heading",
    [
        ({}, "# A reference answer for try it 1.1"),
        ({"FXCOURSE_LANGUAGE": "en"}, "# A reference answer for try it 1.1"),
        ({"FXCOURSE_LANGUAGE": "zh"}, "# 动手试试 1.1 的一个参考答案"),
        ({"FXCOURSE_LANGUAGE": "zh_CN.UTF-8"}, "# 动手试试 1.1 的一个参考答案"),
        ({"FXCOURSE_LANGUAGE": "klingon"}, "# A reference answer for try it 1.1"),
    ],
    ids=["unset", "en", "zh", "zh locale", "unknown"],
)
def test_a_new_kernel_speaks_the_lab_s_language(environment, heading):
    assert first_line_in(environment) == heading


@pytest.mark.parametrize("language, expected", [("zh", "zh"), ("en", "en")])
def test_make_lab_tells_its_kernels_the_course_language(language, expected):
    """`make lab LANG=zh` starts JupyterLab (and so every kernel) with FXCOURSE_LANGUAGE=zh."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    dry_run = subprocess.run(
        ["make", "-n", "--no-print-directory", "lab", f"LANG={language}", "WORKSPACE=/nowhere"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    lab = next(line for line in dry_run.stdout.splitlines() if "jupyter lab" in line)
    assert f"FXCOURSE_LANGUAGE={expected} " in lab, dry_run.stdout


# ---------------------------------------------- the learner's commands, in the learner's language


def make_command(target: str, workspace: Path, language: str) -> str:
    """The command `make TARGET LANG=...` runs (its python line), for this workspace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    dry_run = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            target,
            f"LANG={language}",
            f"WORKSPACE={workspace}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return next(line for line in dry_run.stdout.splitlines() if "-m fxcourse." in line)


def test_make_workspace_and_progress_speak_chinese(tmp_path):
    """What `make workspace LANG=zh` and `make progress LANG=zh` print has no English sentence
    (the first sync, a second one with an update, the progress of a saved chapter)."""
    env = {k: v for k, v in os.environ.items() if k != "FXCOURSE_LANGUAGE"}
    env["FXCOURSE_EXCHANGE"] = str(tmp_path / "exchange")
    mine = tmp_path / "ws-zh"

    def run(target: str) -> str:
        command = make_command(target, mine, "zh_CN.UTF-8")
        done = subprocess.run(
            command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    first = run("workspace")
    assert "新增：01_symbolic_tracing.ipynb" in first and "已是最新" in first, first
    chapter = mine / "02_fx_ir.ipynb"
    for path in (chapter, mine / workspace.BASES / chapter.name):  # opened; the course changed
        notebook = nbformat.read(path, as_version=4)
        notebook.cells[-1].source += "\n(before the update)"
        nbformat.write(notebook, path)
    second = run("workspace")
    assert "已更新（你没有改过它）：02_fx_ir.ipynb" in second, second
    saved = nbformat.read(mine / "01_symbolic_tracing.ipynb", as_version=4)
    next(cell for cell in saved.cells if cell.cell_type == "code").execution_count = 1  # ran
    nbformat.write(saved, mine / "01_symbolic_tracing.ipynb")
    shown = run("progress")
    assert "动手试试已通过" in shown and "尚未运行" in shown and "notebook 保存于" in shown, shown
    assert english_sentences(first + second + shown) == []


def test_every_workspace_progress_and_lab_line_has_its_chinese(tmp_path, monkeypatch, capsys):
    """Each line the commands can print (a held notebook, a lab's delivery, a lab already
    running, an unknown try-it), said in Chinese, has no English sentence; in English it has
    (the detector sees them)."""
    lab = lab_link.RunningLab("http://127.0.0.1:8888/", "t0k", tmp_path, 4242)
    report = workspace.SyncReport(
        copied=["01_a.ipynb"],
        updated=["02_b.ipynb"],
        merged=["03_c.ipynb"],
        kept=["04_d.ipynb"],
        again=["05_e.ipynb"],
        held=["06_f.ipynb", "07_g.ipynb"],
    )
    held_in = lab_link.OpenInLab(
        delivering={"07_g.course-version.ipynb": lab}, blocking={"06_f.ipynb": lab}
    )
    monkeypatch.setattr(lab_link, "lab_of", lambda folder: lab)
    monkeypatch.setattr(lab_link, "wait_for_delivery", lambda folder, names: names[:1])
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "01_a.ipynb").mkdir()  # not readable as a notebook (no JSON error text)
    monkeypatch.setattr(progress, "course_notebooks", lambda: {"01_a.ipynb": None})

    def everything(language: str) -> str:
        with speaking(language):
            report.labs = held_in
            lines = report.lines()
            report.labs = lab_link.OpenInLab(unasked=[lab])  # a lab that did not say
            lines.append(report.held_line("08_h.ipynb"))
            lines += workspace.lab_delivery_lines(tmp_path, ["09_i.ipynb", "10_j.ipynb"])
            lines.append(progress.shown_state("failing") + progress.when(["checks ran", "2026"]))
            with pytest.raises(KeyError) as unknown:
                tryit.show_answer("99.9")
            lines.append(str(unknown.value))
        assert lab_link.main(["running", str(tmp_path), "--language", language]) == 0
        assert progress.main(["--language", language, str(tmp_path / "ws")]) == 0
        assert progress.main(["--language", language, str(tmp_path / "nowhere")]) == 2
        printed = capsys.readouterr()
        return "\n".join(lines) + printed.out + printed.err

    chinese = everything("zh")
    assert "未更新" in chinese and "已经有一个 JupyterLab 在运行" in chinese, chinese
    assert english_sentences(chinese) == [], chinese
    assert "09_i.ipynb、10_j.ipynb" in chinese and "1.1、1.2" in chinese, chinese
    assert len(english_sentences(everything("en"))) >= 10
