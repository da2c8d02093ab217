"""The one cgroup helper (grader/safegrade/cgroup.py), as the grader's sandboxes and the class hub
use it: the machine's own cgroups (v1 with a writable memory controller on this project's
machine), and v2 or none in a fake tree under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.hub.learner_cgroups import LearnerGroups
from grader.safegrade.cgroup import Cgroup, Cgroups, memory_limit_in_force
from grader.safegrade.sandbox import Limits


def fake_v2(root: Path, available: str) -> Path:
    """A unified hierarchy whose group "grader.service" holds this process; `available`: the
    controllers its parent hands it."""
    (root / "grader.service").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids")
    (root / "grader.service" / "cgroup.controllers").write_text(available)
    proc = root / "self-cgroup"
    proc.write_text("0::/grader.service\n")
    return proc


def fake_v1(root: Path) -> Path:
    for controller in ("memory", "cpu"):
        (root / controller / "grading").mkdir(parents=True)
    (root / "memory" / "memory.limit_in_bytes").write_text("max")
    proc = root / "self-cgroup"
    proc.write_text("4:memory:/grading\n1:cpu,cpuacct:/grading\n0::/\n")
    return proc


def test_the_sandboxes_and_the_hub_detect_the_same_hierarchy(tmp_path):
    """One detection: the sandboxes ask for memory, the hub for memory and cpu; both say what is
    in force in the same words."""
    proc = fake_v1(tmp_path)
    sandboxes, hub = Cgroups.detect(tmp_path, proc), LearnerGroups.detect(tmp_path, proc)
    assert sandboxes.parents == {"memory": tmp_path / "memory" / "grading"}
    assert hub.parents == {c: tmp_path / c / "grading" for c in ("memory", "cpu")}
    assert sandboxes.describe() == f"cgroup v1 under {tmp_path / 'memory' / 'grading'}"
    assert hub.describe().startswith("cgroup v1 under ")

    v2 = tmp_path / "v2"
    proc = fake_v2(v2, "memory pids")  # memory delegated, cpu not
    assert Cgroups.detect(v2, proc).describe() == f"cgroup v2 under {v2 / 'grader.service'}"
    hub = LearnerGroups.detect(v2, proc)
    assert hub.describe() == (
        f"no limits are enforced: {v2 / 'grader.service'} has no memory and cpu controllers "
        "(Delegate=yes)"
    )


def test_without_a_cgroup_the_grader_names_rlimit_and_why(tmp_path):
    limits = Limits(memory_mb=300, tmp_mb=64)
    none = Cgroups.detect(tmp_path / "absent", tmp_path / "absent-proc")
    text = memory_limit_in_force(limits, none)
    assert text.startswith("memory: RLIMIT_AS of 300 MiB per process beyond the template's")
    assert text.endswith(
        f"(no writable memory cgroup here: no cgroup memory controller under {tmp_path / 'absent'})"
    )
    v2 = tmp_path / "v2"
    undelegated = Cgroups.detect(v2, fake_v2(v2, "pids"))
    assert undelegated.version == "none" and undelegated.parents == {}
    assert "has no memory controllers (Delegate=yes))" in memory_limit_in_force(limits, undelegated)


def test_a_detected_folder_that_makes_no_memory_group_falls_back_to_rlimit(tmp_path):
    """A folder that is not a cgroup file system makes folders without memory files: the
    sandbox gets no group (the folder it tried is removed again) and the log says so."""
    cgroups = Cgroups.detect(tmp_path, fake_v1(tmp_path))
    assert Cgroup.create(cgroups) is None
    assert not list((tmp_path / "memory" / "grading").iterdir())
    text = memory_limit_in_force(Limits(), cgroups)
    assert "RLIMIT_AS" in text and "refused a new memory group" in text, text


def test_this_machines_cgroup_limits_a_sandbox_group():
    """The machine's own cgroups: where a memory group can be made (root on v1 or delegated v2),
    the limit is written and read back and the log names the hierarchy as the hub would."""
    cgroups = Cgroups.detect()
    cgroup = Cgroup.create(cgroups)
    if cgroup is None:
        pytest.skip(f"no memory cgroup on this machine: {cgroups.describe()}")
    try:
        cgroup.limit(256 << 20)
        assert int((cgroup.path / cgroup.limit_file).read_text()) == 256 << 20
        assert cgroup.usage() == 0  # no process in it yet
    finally:
        cgroup.remove()
    assert not cgroup.path.exists()
    text = memory_limit_in_force(Limits(memory_mb=100), cgroups)
    assert f"a cgroup ({cgroups.version} {cgroup.limit_file}) per sandbox" in text, text
    assert cgroups.describe() in text and "+ 100 MiB" in text
    assert LearnerGroups.detect().describe().startswith(f"cgroup {cgroups.version} under ")
