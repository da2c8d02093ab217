"""fxcourse.messages: the language of fxcourse's own messages in a kernel that has not run a
chapter's language cell (`show_answer` in a new notebook of a Chinese lab, a console)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
