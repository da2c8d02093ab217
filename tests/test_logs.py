"""fxcourse.logs.quiet_logs silences the named loggers inside the block only."""

from __future__ import annotations

import logging

import pytest

from fxcourse.logs import quiet_logs


def test_quiet_logs_drops_warnings_of_the_named_logger_only(caplog):
    noisy = logging.getLogger("fxcourse.test.noisy")
    other = logging.getLogger("fxcourse.test.other")
    with caplog.at_level(logging.WARNING), quiet_logs("fxcourse.test.noisy"):
        noisy.warning("hidden")
        noisy.error("still shown")
        other.warning("shown too")
    assert [r.getMessage() for r in caplog.records] == ["still shown", "shown too"]


def test_quiet_logs_restores_levels_even_after_an_error():
    logger = logging.getLogger("fxcourse.test.restore")
    logger.setLevel(logging.INFO)
    with pytest.raises(ValueError), quiet_logs("fxcourse.test.restore"):
        assert logger.level == logging.ERROR
        raise ValueError("boom")
    assert logger.level == logging.INFO
