"""The pinned environment has one source of truth: env/requirements.lock."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

from fxcourse.workspace import course_kernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "env"))
import environment_yml  # noqa: E402

LOCK_TEXT = (ROOT / "env" / "requirements.lock").read_text()


def _pins() -> dict[str, str]:
    """Name -> version for the lock lines whose environment markers match this interpreter."""
    pins = {}
    for line in environment_yml.pinned_requirements(LOCK_TEXT):
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate():
            pins[requirement.name.lower().replace("_", "-")] = str(requirement.specifier)[2:]
    return pins


def test_environment_yml_is_derived_from_the_lock():
    committed = (ROOT / "environment.yml").read_text()
    assert committed == environment_yml.render(LOCK_TEXT), (
        "environment.yml is stale: run `make environment.yml`"
    )


def test_lock_pins_a_matching_torch_and_torchvision_pair():
    pins = _pins()
    assert (pins["torch"], pins["torchvision"]) == ("2.14.1", "0.29.2")


def test_every_direct_requirement_is_in_the_lock():
    pins = _pins()
    requirement_in = (ROOT / "env" / "requirements.in").read_text().splitlines()
    names = [re.split(r"[<>=!~ ;\[]", line)[0].lower() for line in requirement_in]
    missing = [n for n in names if n and not n.startswith("#") and n not in pins]
    assert not missing, f"in requirements.in but not locked: {missing}; run `make lock`"


def test_installed_packages_match_the_lock():
    def installed(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    # Local version labels (+cu130) are build tags of the same release.
    wrong = {
        name: (wanted, installed(name))
        for name, wanted in _pins().items()
        if installed(name) is not None and installed(name).split("+")[0] != wanted.split("+")[0]
    }
    assert not wrong, f"installed versions differ from the lock (wanted, got): {wrong}"


def test_course_kernel_is_registered_in_the_environment():
    kernels = subprocess.run(
        [sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'"{course_kernel()["name"]}"' in kernels


GROUPED_TESTS = """
import time
import pytest

pytestmark = pytest.mark.xdist_group("shared")


@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    time.sleep(0.2)  # so that an idle second worker would take some of them
"""


def test_xdist_groups_send_a_module_to_one_worker(tmp_path):
    """`make test` relies on --dist loadgroup: tests that share a server or a gradebook build it
    once, in one worker. Some pytest/pytest-xdist pairs ignore the groups without a word."""
    (tmp_path / "test_grouped.py").write_text(GROUPED_TESTS)
    command = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v"]
    command += ["-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = set(re.findall(r"\[(gw\d+)\].*PASSED", done.stdout))
    assert len(workers) == 1, f"one xdist group ran on {sorted(workers)}:\n{done.stdout}"


def test_importing_nbformat_builds_no_iri_grammar():
    """The lock leaves out rfc3987-syntax (Makefile, LOCK_LEFT_OUT): jsonschema imports it when
    present, and it builds a Lark grammar at import, about two seconds of every grader command."""
    code = "import sys, nbformat, jsonschema\n"
    code += "print(sorted({'rfc3987_syntax', 'lark'} & {*sys.modules}))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert imported.stdout.strip() == "[]", imported.stdout + imported.stderr
    assert "rfc3987-syntax" not in _pins() and "lark" not in _pins()
