"""fxcourse.sourcemap lists a package's files and their public names, without importing them."""

from __future__ import annotations

import sys

import pytest

from fxcourse.sourcemap import markdown_table, package_folder, source_map


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    root = tmp_path / "mapme"
    (root / "inner").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "declared.py").write_text(
        "__all__ = ['Shown', 'helper']\nclass Shown: ...\nclass NotListed: ...\ndef helper(): ...\n"
    )
    (root / "undeclared.py").write_text(
        "raise RuntimeError('importing me is a bug')\n"
        "def _private(): ...\ndef later(): ...\nclass First: ...\n"
    )
    (root / "inner" / "deep.py").write_text("class Deep: ...\n" * 3)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "mapme"
    sys.modules.pop("mapme", None)


def test_rows_use_all_when_declared_else_public_classes_then_functions(fake_package):
    rows = {row.path: row for row in source_map(fake_package)}
    assert sorted(rows) == ["__init__.py", "declared.py", "undeclared.py"]
    assert rows["declared.py"].names == ["Shown", "helper"]
    assert rows["undeclared.py"].names == ["First", "later"]
    assert rows["undeclared.py"].lines == 4
    assert "mapme.undeclared" not in sys.modules


def test_folders_select_subfolders(fake_package):
    rows = source_map(fake_package, folders=("inner",))
    assert [(row.path, row.lines, row.names) for row in rows] == [
        ("inner/deep.py", 3, ["Deep", "Deep", "Deep"])
    ]


def test_markdown_table_shortens_long_name_lists(fake_package):
    table = markdown_table(source_map(fake_package, folders=("inner",)), most=2)
    assert table.splitlines()[0] == "| file | lines | defines |"
    assert "| `inner/deep.py` | 3 | `Deep`, `Deep` and 1 more |" in table
    assert "| `__init__.py` | 0 | (no public names) |" in markdown_table(source_map(fake_package))


def test_the_torch_fx_map_names_the_classes_the_chapter_points_to():
    rows = {row.path: row.names for row in source_map("torch.fx", ("", "passes", "passes/infra"))}
    assert "Graph" in rows["graph.py"] and "CodeGen" in rows["graph.py"]
    assert "Tracer" in rows["_symbolic_trace.py"]
    assert {"Interpreter", "Transformer"} <= set(rows["interpreter.py"])
    assert "split_module" in rows["passes/split_module.py"]
    assert "PassManager" in rows["passes/infra/pass_manager.py"]


def test_package_folder_names_a_missing_package():
    with pytest.raises(ModuleNotFoundError, match="no_such_package_here"):
        package_folder("no_such_package_here")
