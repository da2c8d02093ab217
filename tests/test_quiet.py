"""fxcourse.quiet.hushed hides stderr and named loggers inside the block and restores them."""

from __future__ import annotations

import logging
import sys

import pytest

from fxcourse.quiet import hushed


def test_hides_stderr_and_warnings_then_restores(capsys, caplog):
    logger = logging.getLogger("fxcourse.test.noisy")
    logger.setLevel(logging.INFO)
    with hushed("fxcourse.test.noisy") as captured:
        print("partial graph", file=sys.stderr)
        logger.warning("hidden warning")
        logger.error("an error still shows")
    assert captured.getvalue() == "partial graph\n"
    assert capsys.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records] == ["an error still shows"]
    assert logger.level == logging.INFO
    logger.warning("shown again")
    assert caplog.records[-1].getMessage() == "shown again"


def test_restores_after_an_exception():
    logger = logging.getLogger("fxcourse.test.raising")
    stderr_before = sys.stderr
    with pytest.raises(ValueError), hushed("fxcourse.test.raising"):
        assert logger.level == logging.ERROR and sys.stderr is not stderr_before
        raise ValueError("boom")
    assert logger.level == logging.NOTSET
    assert sys.stderr is stderr_before
