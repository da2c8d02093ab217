"""Collecting uploads (grader/intake/, `make autograde SUBMISSIONS=...`): layouts, LMS file
names, zips, and hostile uploads (links, FIFOs, sockets, odd names, zip slips, caps).

Nothing is graded here: each test collects into a temporary course folder and reads what
arrived in classdata/submitted and what the report lists.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import threading
import zipfile
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from grader import course_grader, exercises, instructor, intake
from grader.course import Course
from grader.intake import exchange as intake_exchange
from grader.safegrade.grading_limits import LIMITS

ASSIGNMENTS = Course.configured().exercises  # this repository's
COURSE_ID = Course.configured().course_id

ROOT = Path(__file__).resolve().parents[1]

EX1, EX2, EX3 = ASSIGNMENTS


def notebook(label: str) -> bytes:
    """Distinct content per file, so that every arrival can be traced to its source."""
    return f'{{"cells": [], "metadata": {{"label": "{label}"}}}}\n'.encode()


def put(path: Path | bytes, content: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)


def arrived(course: Path) -> dict[str, bytes]:
    """Every file in the course's submitted folder: path (odd bytes as %XX) -> content."""
    found = {}
    submitted = Course.configured(course).submitted
    for folder, _, files in os.walk(submitted):
        for name in files:
            path = Path(folder, name)
            relative = intake.safe_name(str(path.relative_to(submitted)))
            found[relative] = path.read_bytes()
    return found


def collect(upload: Path, course: Path, lms: str | None = "plain", **kwargs) -> intake.Report:
    return instructor.collect(upload, course, lms, **kwargs)


def refused(report: intake.Report) -> dict[str, str]:
    return dict(report.refused)


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A scratch course that has this repository's exercises (each an empty notebook in its
    solutions/): the names intake places submissions under."""
    return course_of_exercises(tmp_path / "course")


def course_of_exercises(root: Path) -> Path:
    for name in ASSIGNMENTS:
        (root / "solutions" / name).mkdir(parents=True)
        (root / "solutions" / name / f"{name}.ipynb").write_text("{}")
    return root


def test_nbgrader_layout_arrives_whole_with_its_timestamp(tmp_path: Path, course: Path):
    upload = tmp_path / "upload"
    put(upload / "alice" / EX1 / f"{EX1}.ipynb", notebook("alice ex1"))
    put(upload / "alice" / EX1 / "data" / "weights.txt", b"1 2 3")
    put(upload / "alice" / EX1 / "timestamp.txt", b"2025-03-01 09:30:00.000000 UTC\n")
    put(upload / "bob" / EX3 / f"{EX3}.ipynb", notebook("bob ex3"))
    report = collect(upload, course, lms=None)  # no file needs a pattern: no config is read
    assert sorted(report.collected) == [("alice", EX1), ("bob", EX3)]
    assert report.refused == [] and report.files == 4
    assert arrived(course) == {
        f"alice/{EX1}/{EX1}.ipynb": notebook("alice ex1"),
        f"alice/{EX1}/data/weights.txt": b"1 2 3",
        f"alice/{EX1}/timestamp.txt": b"2025-03-01 09:30:00.000000 UTC\n",
        f"bob/{EX3}/{EX3}.ipynb": notebook("bob ex3"),
    }


def test_flat_lms_files_are_placed_by_student_and_assignment(tmp_path: Path, course: Path):
    upload = tmp_path / "download"
    put(upload / f"alice_{EX1}.ipynb", notebook("alice"))
    put(upload / f"bob_van_dyke_{EX2}.ipynb", notebook("bob"))  # ids may hold underscores
    put(upload / f"bob_van_dyke_{EX3}.ipynb", notebook("bob 3"))
    report = collect(upload, course)
    assert sorted(report.collected) == [
        ("alice", EX1),
        ("bob_van_dyke", EX2),
        ("bob_van_dyke", EX3),
    ]
    assert arrived(course) == {
        f"alice/{EX1}/{EX1}.ipynb": notebook("alice"),
        f"bob_van_dyke/{EX2}/{EX2}.ipynb": notebook("bob"),
        f"bob_van_dyke/{EX3}/{EX3}.ipynb": notebook("bob 3"),
    }


def test_what_cannot_be_placed_is_listed_and_the_command_fails(tmp_path, course, capsys):
    upload = tmp_path / "download"
    put(upload / f"alice_{EX1}.ipynb", notebook("alice"))
    put(upload / "notes.txt", b"hello")
    put(upload / "carol_ex9.ipynb", notebook("carol"))
    put(upload / "dave" / "ex9" / "ex9.ipynb", notebook("dave"))
    status = course_grader.main(["--course", str(course), "collect", str(upload), "--lms", "plain"])
    out = capsys.readouterr().out
    assert status == 1, out
    reasons = refused(collect(upload, course_of_exercises(tmp_path / "again")))
    assert set(reasons) == {"notes.txt", "carol_ex9.ipynb", "dave/ex9/ex9.ipynb"}
    assert "'ex9' is not an assignment of this course" in reasons["dave/ex9/ex9.ipynb"]
    assert "LMS=plain" in reasons["notes.txt"]
    for path in reasons:
        assert f"not collected: {path}: " in out
    assert "collected 1 submission(s), 1 file(s)" in out and "3 file(s) not collected" in out
    assert list(arrived(course)) == [f"alice/{EX1}/{EX1}.ipynb"]


def test_a_misspelt_exercise_folder_is_refused_with_the_near_match(tmp_path, course, capsys):
    upload = tmp_path / "download"
    put(upload / "erin" / "ex1_sigmoid_to_tan" / "ex1_sigmoid_to_tan.ipynb", notebook("erin"))
    put(upload / "dave" / "ex9" / "ex9.ipynb", notebook("dave"))
    reasons = refused(collect(upload, course))
    slip = reasons["erin/ex1_sigmoid_to_tan/ex1_sigmoid_to_tan.ipynb"]
    assert (
        f"'ex1_sigmoid_to_tan' is not an assignment of this course; did you mean '{EX1}'?" in slip
    )
    assert "did you mean" not in reasons["dave/ex9/ex9.ipynb"]  # nothing near: no guess


def test_a_misspelt_assignment_option_names_the_near_match(course, capsys):
    status = course_grader.main(["--course", str(course), "export", "ex2_node_dmp"])
    assert status == 2
    assert "did you mean 'ex2_node_dump'?" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        course_grader.main(["--course", str(course), "feedback", "--assignment", "ex3_timing"])
    assert stopped.value.code == 2
    assert "did you mean 'ex3_timing_interpreter'?" in capsys.readouterr().err


def make_zip(path: Path, entries: dict[str, bytes], root: str = "") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries.items():
            archive.writestr(root + name, content)
    return path


def test_a_zip_gives_what_its_folder_gives(tmp_path: Path):
    entries = {
        f"alice/{EX1}/{EX1}.ipynb": notebook("alice"),
        f"alice/{EX1}/helper.py": b"x = 1\n",
        f"bob_smith_{EX2}.ipynb": notebook("bob"),
    }
    folder = tmp_path / "folder"
    for name, content in entries.items():
        put(folder / name, content)
    expected = arrived_after(folder, tmp_path / "from_folder")
    assert len(expected) == 3
    for root in ("", "download/"):  # a zip of the files, and `zip -r download.zip download`
        upload = make_zip(tmp_path / f"upload{len(root)}.zip", entries, root)
        assert arrived_after(upload, tmp_path / f"from_zip{len(root)}") == expected


def arrived_after(upload: Path, course: Path) -> dict[str, bytes]:
    report = collect(upload, course_of_exercises(course))
    assert report.refused == [], report.refused
    return arrived(course)


def test_a_zip_of_one_student_folder_keeps_the_student(tmp_path: Path, course: Path):
    upload = make_zip(tmp_path / "alice.zip", {f"alice/{EX1}/{EX1}.ipynb": notebook("a")})
    assert collect(upload, course).collected == [("alice", EX1)]


def test_macos_metadata_in_a_zip_is_listed_not_collected(tmp_path: Path, course: Path):
    entries = {f"dl/alice_{EX1}.ipynb": notebook("a"), f"__MACOSX/dl/._alice_{EX1}.ipynb": b"\0"}
    report = collect(make_zip(tmp_path / "mac.zip", entries), course)
    assert report.collected == [("alice", EX1)]
    assert "macOS" in refused(report)[f"__MACOSX/dl/._alice_{EX1}.ipynb"]


def test_links_are_reported_and_never_followed(tmp_path: Path, course: Path):
    secrets = tmp_path / "instructor"
    put(secrets / "solutions" / f"{EX1}.ipynb", b"SOLUTION AND HIDDEN TESTS")
    put(secrets / "gradebook.db", b"GRADEBOOK")
    work = tmp_path / "upload" / "mallory" / EX1
    put(work / f"{EX1}.ipynb", notebook("mallory"))
    os.symlink(secrets / "solutions" / f"{EX1}.ipynb", work / "answers.ipynb")
    os.symlink(secrets / "gradebook.db", work / "gradebook.db")
    os.symlink(secrets / "solutions", work / "solutions")  # a link to a folder
    os.symlink(tmp_path / "nowhere", work / "dangling.ipynb")
    os.symlink(secrets / "solutions" / f"{EX1}.ipynb", tmp_path / "upload" / f"eve_{EX1}.ipynb")
    report = collect(tmp_path / "upload", course)
    reasons = refused(report)
    links = [f"mallory/{EX1}/{name}" for name in ("answers.ipynb", "gradebook.db", "solutions")]
    links += [f"mallory/{EX1}/dangling.ipynb", f"eve_{EX1}.ipynb"]
    assert set(reasons) == set(links)
    assert all("symbolic link" in reason for reason in reasons.values())
    assert arrived(course) == {f"mallory/{EX1}/{EX1}.ipynb": notebook("mallory")}


@contextmanager
def fifo_watch(fifo: Path):
    """Fails the test if anyone opens the FIFO for reading (it would block without a writer)."""
    stop, opened = threading.Event(), []

    def poke():
        while not stop.wait(0.05):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                opened.append(True)  # succeeds only while a reader has it open
            except OSError:
                pass

    watcher = threading.Thread(target=poke, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    assert not opened, f"{fifo} was opened"


def test_fifos_and_sockets_are_reported_without_being_opened(tmp_path: Path, course: Path):
    work = tmp_path / "up" / "alice" / EX1
    put(work / f"{EX1}.ipynb", notebook("alice"))
    os.mkfifo(work / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(work / "sock"))
    try:
        with fifo_watch(work / "pipe"):
            report = collect(tmp_path / "up", course)
    finally:
        server.close()
    reasons = refused(report)
    assert "named pipe (FIFO)" in reasons[f"alice/{EX1}/pipe"]
    assert "socket" in reasons[f"alice/{EX1}/sock"]
    assert report.collected == [("alice", EX1)] and len(reasons) == 2


def test_odd_file_names_are_copied_under_safe_names(tmp_path: Path, course: Path):
    upload = os.fsencode(tmp_path / "up")
    put(upload + f"/alice/{EX1}/{EX1}.ipynb".encode(), notebook("alice"))
    put(upload + f"/alice/{EX1}/caf\xe9 data.csv".encode("latin-1"), b"latin-1 name")
    put(upload + f"/alice/{EX1}/bell\x07.txt".encode(), b"control character")
    put(upload + f"/alice/{EX1}/\xd0\xb4\xd0\xb0.txt".encode("latin-1"), b"cyrillic, valid")
    put(upload + f"/j\xf6rg/{EX2}/{EX2}.ipynb".encode("latin-1"), notebook("jorg"))
    put(upload + f"/.hidden/{EX2}/{EX2}.ipynb".encode(), notebook("hidden"))
    put(upload + f"/caf\xe9_{EX3}.ipynb".encode("latin-1"), notebook("flat"))
    put(upload + f"/bob /{EX3}/{EX3}.ipynb".encode(), notebook("trailing space"))
    put(upload + f"/Ann [TA] Lee/{EX3}/{EX3}.ipynb".encode(), notebook("brackets"))
    report = collect(Path(os.fsdecode(upload)), course)
    assert arrived(course) == {
        f"alice/{EX1}/{EX1}.ipynb": notebook("alice"),
        f"alice/{EX1}/caf%E9 data.csv": b"latin-1 name",
        f"alice/{EX1}/bell%07.txt": b"control character",
        f"alice/{EX1}/да.txt": b"cyrillic, valid",
    }
    assert sum("copied as" in note for note in report.notes) == 2
    reasons = refused(report)
    assert set(reasons) == {
        f"j\\xf6rg/{EX2}/{EX2}.ipynb",
        f".hidden/{EX2}/{EX2}.ipynb",
        "caf\\xe9_" + f"{EX3}.ipynb",
        f"bob /{EX3}/{EX3}.ipynb",
        f"Ann [TA] Lee/{EX3}/{EX3}.ipynb",
    }
    assert "rename it, say 'Ann (TA) Lee'" in reasons[f"Ann [TA] Lee/{EX3}/{EX3}.ipynb"]
    assert all("student id" in reason for reason in reasons.values())
    "\n".join(report.lines("up")).encode("ascii", "backslashreplace")  # printable as it is


def regular_files(upload: Path) -> dict[str, bytes]:
    """Every regular file of a folder (links not followed), by its path as the report shows it."""
    found = {}
    for folder, folders, files in os.walk(os.fsencode(upload)):
        for name in files + folders:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                relative = os.fsdecode(os.path.relpath(path, os.fsencode(upload)))
                found[intake.shown(relative)] = Path(os.fsdecode(path)).read_bytes()
    return found


def test_every_regular_file_arrives_or_is_listed(tmp_path: Path, course: Path):
    upload = tmp_path / "up"
    hostile = os.fsencode(upload)
    for index, name in enumerate(
        [f"ann/{EX1}/{EX1}.ipynb", f"ann/{EX1}/x\x1b[31m.py", f"bo_{EX2}.ipynb", "readme.md"]
        + [f"ann/{EX1}/deep/" + "d/" * 40 + "leaf.txt", f"c\udcff_{EX3}.ipynb", "zz/ex9/a.ipynb"]
    ):
        put(hostile + b"/" + os.fsencode(name), notebook(f"file {index}"))
    os.symlink("/etc/hostname", upload / f"ann_{EX2}.ipynb")
    os.mkfifo(upload / "ann" / EX1 / "fifo")
    before = set(tmp_path.rglob("*"))
    with fifo_watch(upload / "ann" / EX1 / "fifo"):
        report = collect(upload, course)
    copied = set(arrived(course).values())
    listed = {path for path, _ in report.refused}
    for path, content in regular_files(upload).items():
        assert content in copied or path in listed, f"{path} was neither copied nor listed"
    submitted = Course.configured(course).submitted
    new = set(tmp_path.rglob("*")) - before
    outside = [
        p for p in new if submitted not in p.parents and p not in (*submitted.parents, submitted)
    ]
    assert not outside, "wrote outside the submitted folder"
    assert not list(Course.configured(course).submitted.glob(".collect-*")), (
        "staging folder left behind"
    )


def zip_with(path: Path, files: dict[str, bytes], special: dict[str, tuple[int, bytes]]) -> Path:
    """A zip of plain files plus entries with a Unix mode (links, FIFOs)."""
    make_zip(path, files)
    with zipfile.ZipFile(path, "a") as archive:
        for name, (mode, content) in special.items():
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, mode << 16
            archive.writestr(info, content)
    return path


def test_zip_entries_that_escape_link_or_are_special_are_refused(tmp_path, course, monkeypatch):
    monkeypatch.setattr(LIMITS, "file_bytes", 1000)
    files = {f"ann/{EX1}/{EX1}.ipynb": notebook("ann"), "../evil.ipynb": b"slip"}
    files |= {f"/abs_{EX1}.ipynb": b"absolute", f"ann/{EX1}/../../../up.ipynb": b"slip 2"}
    files |= {f"..\\win_{EX2}.ipynb": b"backslash slip", f"ann/{EX1}/big.bin": b"x" * 1001}
    special = {f"ann/{EX1}/link.ipynb": (0o120777, b"/etc/passwd"), "pipe": (0o010644, b"")}
    upload = zip_with(tmp_path / "up.zip", files, special)
    report = collect(upload, course)
    reasons = refused(report)
    for name in ("../evil.ipynb", f"/abs_{EX1}.ipynb", f"..\\win_{EX2}.ipynb"):
        assert "zip slip" in next(r for p, r in reasons.items() if p.endswith(name.lstrip("./\\")))
    assert "symbolic link" in reasons[f"ann/{EX1}/link.ipynb"]
    assert "FIFO" in reasons["pipe"] and "cap" in reasons[f"ann/{EX1}/big.bin"]
    assert len(reasons) == 7
    assert arrived(course) == {f"ann/{EX1}/{EX1}.ipynb": notebook("ann")}
    assert {p.name for p in tmp_path.iterdir()} == {"up.zip", "course"}


def test_zip_caps_encryption_and_damage(tmp_path: Path, course: Path, monkeypatch):
    entries = {f"a_{EX1}.ipynb": notebook("a"), f"b_{EX1}.ipynb": notebook("b")}
    raw = make_zip(tmp_path / "up.zip", entries).read_bytes()
    damaged = raw.replace(notebook("b"), notebook("B"))  # stored, so the CRC no longer matches
    (tmp_path / "damaged.zip").write_bytes(damaged)
    reasons = refused(collect(tmp_path / "damaged.zip", course))
    assert (
        list(reasons) == [f"b_{EX1}.ipynb"] and "could not be copied" in reasons[f"b_{EX1}.ipynb"]
    )
    central = damaged.index(b"PK\x01\x02")  # set the "encrypted" flag of the first entry
    flagged = damaged[: central + 8] + b"\x01" + damaged[central + 9 :]
    (tmp_path / "locked.zip").write_bytes(flagged)
    assert (
        "encrypted" in refused(collect(tmp_path / "locked.zip", tmp_path / "c2"))[f"a_{EX1}.ipynb"]
    )
    monkeypatch.setattr(LIMITS, "zip_bytes", len(notebook("a")))
    assert "cap" in refused(collect(tmp_path / "up.zip", tmp_path / "c3"))[f"b_{EX1}.ipynb"]
    monkeypatch.setattr(LIMITS, "zip_entries", 1)
    with pytest.raises(intake.IntakeError, match="over the cap"):
        collect(tmp_path / "up.zip", tmp_path / "c4")


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no room on the disk (its copy would)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


def plant_sparse_files(folder: Path) -> int:
    """Files each under the per-file cap, together over the per-submission cap; their count."""
    count = LIMITS.submission_bytes // (LIMITS.file_bytes - 2**20) + 1
    put(folder / f"{EX1}.ipynb", notebook("big"))
    for index in range(count):
        sparse(folder / f"data{index}.bin", LIMITS.file_bytes - 2**20)
    return count


def copies_made(monkeypatch) -> list[str]:
    """The files intake copies from now on (a refusal must come before any of ada's)."""
    copied, copy_file = [], intake.copy_file

    def counted(found, target, room):
        copied.append("/".join(found.parts))
        return copy_file(found, target, room)

    monkeypatch.setattr(intake, "copy_file", counted)
    return copied


def test_a_submission_over_the_total_byte_cap_is_refused_whole(
    tmp_path: Path, course: Path, monkeypatch
):
    """Many files under the per-file cap (sparse: no room on the disk until copied) that pass
    the per-submission cap together: nothing of them is copied, the reason names the cap."""
    plant_sparse_files(tmp_path / "up" / "ada" / EX1)
    put(tmp_path / "up" / "bob" / EX1 / f"{EX1}.ipynb", notebook("bob"))
    copied = copies_made(monkeypatch)
    report = collect(tmp_path / "up", course)
    assert copied == [f"bob/{EX1}/{EX1}.ipynb"]
    assert f"{LIMITS.submission_bytes} bytes per submission" in refused(report)[f"ada/{EX1}"]
    assert set(arrived(course)) == {f"bob/{EX1}/{EX1}.ipynb"}, "the others are still collected"
    assert not list(Course.configured(course).submitted.glob(".collect-*")), (
        "a partial copy was left behind"
    )


def test_a_submission_that_grew_after_its_sizes_were_read_is_refused_whole(
    tmp_path: Path, course: Path, monkeypatch
):
    """The copy counts the bytes again (a learner's process can grow a file after the sizes
    were read): past the cap, nothing of the submission is left."""
    folder = tmp_path / "up" / "ada" / EX1
    put(folder / f"{EX1}.ipynb", notebook("ada"))
    put(folder / "data.bin", b"x" * 4096)
    monkeypatch.setattr(LIMITS, "submission_bytes", 4096)
    monkeypatch.setattr(intake, "over_caps", lambda files: "")  # the sizes read before it grew
    report = collect(tmp_path / "up", course)
    assert "4096 bytes per submission" in refused(report)[f"ada/{EX1}"]
    assert report.collected == [] and not arrived(course)


def test_an_exchange_submission_over_the_caps_is_refused_whole(
    tmp_path: Path, course: Path, monkeypatch
):
    """The exchange by the same caps: total bytes, and number of files."""
    name = f"ada+{EX1}+2026-01-01 10:00:00.000000 UTC+aaa"
    folder = inbound_folder(tmp_path / "exchange", name, {})
    plant_sparse_files(folder)
    copied = copies_made(monkeypatch)
    report = collect_exchange(tmp_path / "exchange", course, {os.getuid(): "ada"})
    assert f"{LIMITS.submission_bytes} bytes per submission" in refused(report)[name]
    assert not copied, "copied before it was refused"
    assert report.collected == [] and not arrived(course)
    for path in folder.glob("data*.bin"):
        path.unlink()
    for index in range(5):
        put(folder / f"small{index}.txt", b"x")
    monkeypatch.setattr(LIMITS, "submission_files", 5)  # the notebook makes 6
    report = collect_exchange(tmp_path / "exchange", course, {os.getuid(): "ada"})
    assert "6 files, over the cap of 5 files per submission" in refused(report)[name]
    assert report.collected == [] and not arrived(course) and not copied
    assert not list(Course.configured(course).submitted.glob(".collect-*")), (
        "a partial copy was left behind"
    )


def test_a_resubmission_replaces_the_earlier_copy_unless_older(tmp_path: Path, course: Path):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    put(first / "ann" / EX1 / f"{EX1}.ipynb", notebook("draft"))
    put(first / "ann" / EX1 / "scratch.py", b"old helper")
    put(first / "ann" / EX1 / "timestamp.txt", b"2025-03-01 10:00:00.000000 UTC")
    put(second / "ann" / EX1 / f"{EX1}.ipynb", notebook("final"))
    put(second / "ann" / EX1 / "timestamp.txt", b"2025-03-02 10:00:00.000000 UTC")
    put(third / "ann" / EX1 / f"{EX1}.ipynb", notebook("stale"))
    put(third / "ann" / EX1 / "timestamp.txt", b"2025-02-28 10:00:00.000000 UTC")
    collect(first, course)
    assert collect(second, course).collected == [("ann", EX1)]
    final = {
        f"ann/{EX1}/{EX1}.ipynb": notebook("final"),
        f"ann/{EX1}/timestamp.txt": b"2025-03-02 10:00:00.000000 UTC",
    }
    assert arrived(course) == final  # scratch.py of the first upload is gone
    report = collect(third, course)
    assert (
        report.collected == [] and "that one is kept" in refused(report)[f"ann/{EX1}/{EX1}.ipynb"]
    )
    assert arrived(course) == final


def test_two_files_for_one_place(tmp_path: Path, course: Path):
    upload = tmp_path / "up"
    put(upload / f"ann_{EX1}.ipynb", notebook("flat"))
    put(upload / "ann" / EX1 / f"{EX1}.ipynb", notebook("folder"))
    reasons = refused(collect(upload, course))
    assert len(reasons) == 2 and all("collect again" in r for r in reasons.values())
    assert arrived(course) == {}
    board = tmp_path / "board"  # with times in the names, the newer one wins
    for when in ("2025-03-01-10-00-00", "2025-03-02-09-00-00"):
        put(board / f"Ex 1_ann_attempt_{when}_{EX1}.ipynb", notebook(when))
    report = collect(board, course, lms="blackboard")
    assert "older copy" in next(iter(refused(report).values()))
    assert arrived(course)[f"ann/{EX1}/{EX1}.ipynb"] == notebook("2025-03-02-09-00-00")
    assert arrived(course)[f"ann/{EX1}/timestamp.txt"] == b"2025-03-02 09:00:00.000000 UTC\n"


# File names as the LMSes write them (Canvas: lib/content_zipper.rb; Moodle: mod/assign
# download_submissions; Blackboard: the example in nbgrader's FileNameCollectorPlugin help).
LMS_NAMES = [
    ("canvas", f"smithbob_340934_208490284_{EX1}.ipynb", ("340934", EX1)),
    ("canvas", f"smithbob_LATE_340934_208490285_{EX2}-1.ipynb", ("340934", EX2)),
    ("canvas", f"LATE_anon_Xk3Pz_208490286_{EX3}.ipynb", ("anon_Xk3Pz", EX3)),
    ("canvas", f"anon_Qw7Rt_208490288_{EX1}.ipynb", ("anon_Qw7Rt", EX1)),
    ("canvas", "smithbob_340934_208490287_notes.ipynb", None),
    ("moodle", f"Ann Lee_1234567_assignsubmission_file_/{EX1}.ipynb", ("Ann Lee", EX1)),
    ("moodle", f"Ann Lee_1234567_assignsubmission_file_{EX2}.ipynb", ("Ann Lee", EX2)),
    ("moodle", "Ann Lee_1234567_assignsubmission_onlinetext_/onlinetext.html", None),
    ("blackboard", f"Exercise 1_jlee7_attempt_2025-03-02-10-15-00_{EX1}.ipynb", ("jlee7", EX1)),
    ("blackboard", "Exercise 1_jlee7_attempt_2025-03-02-10-15-00.txt", None),
    ("plain", f"ann_lee_{EX3}.ipynb", ("ann_lee", EX3)),
]


@pytest.mark.parametrize(("lms", "name", "expected"), LMS_NAMES)
def test_lms_patterns_read_real_download_names(tmp_path, course, lms, name, expected):
    put(tmp_path / "up" / name, b"{}")
    report = collect(tmp_path / "up", course, lms=lms)
    assert report.collected == ([expected] if expected else [])
    assert len(report.refused) == (0 if expected else 1)


def test_times_in_file_names_are_read_in_the_given_zone(tmp_path: Path, course: Path):
    put(tmp_path / "up" / f"Ex1_jlee7_attempt_2025-03-02-10-15-00_{EX1}.ipynb", b"{}")
    collect(tmp_path / "up", course, lms="blackboard", zone="Europe/Berlin")
    stamp = (Course.configured(course).submitted / "jlee7" / EX1 / "timestamp.txt").read_text()
    assert stamp == "2025-03-02 09:15:00.000000 UTC\n"  # 10:15 in Berlin (CET, UTC+1)


def test_canvas_names_under_the_plain_pattern_get_a_hint(tmp_path: Path, course: Path):
    put(tmp_path / "up" / f"smithbob_340934_208490284_{EX1}.ipynb", b"{}")
    report = collect(tmp_path / "up", course, lms="plain")
    assert any("LMS=canvas" in note for note in report.notes)


@pytest.mark.parametrize("case", ["missing", "empty", "not a zip", "bad zone"])
def test_unreadable_uploads_fail_clearly(tmp_path: Path, course: Path, capsys, case: str):
    upload = tmp_path / "upload"
    if case == "empty":
        upload.mkdir()
    elif case == "not a zip":
        upload.write_bytes(b"PK\x03\x04 this is no zip")
    zone = ["--timezone", "Mars/Olympus"] if case == "bad zone" else []
    status = course_grader.main(["--course", str(course), "collect", str(upload), *zone])
    assert status == 2
    assert "collect:" in capsys.readouterr().err
    assert not Course.configured(course).submitted.exists() or not any(
        Course.configured(course).submitted.iterdir()
    )


@pytest.fixture
def configured_course(tmp_path_factory) -> Path:
    """A course folder with the repository's nbgrader configuration and its exercises' sources
    (from which the course's file-name patterns name them), nothing graded."""
    return instructor.copy_course(tmp_path_factory.mktemp("configured"))


def test_the_course_config_names_the_default_pattern(configured_course: Path, tmp_path: Path):
    put(tmp_path / "up" / f"bob_smith_{EX2}.ipynb", b"{}")
    report = collect(tmp_path / "up", configured_course, lms=None)
    assert report.collected == [("bob_smith", EX2)]
    put(tmp_path / "up" / "stray.ipynb", b"{}")
    assert (
        "LMS=plain" in refused(collect(tmp_path / "up", configured_course, lms=None))["stray.ipynb"]
    )


@pytest.mark.parametrize("lms", [None, "canvas"])  # the configured pattern, and a preset
def test_an_lms_download_of_an_exercise_in_chinese_goes_to_its_assignment(
    tmp_path, configured_course, class_languages, lms
):
    """The class's languages decide: refused (naming the exercise) until the class has zh."""
    zh = exercises.translated(EX1, "zh")
    name = {None: f"ann_lee_{zh}.ipynb", "canvas": f"leeann_340934_208490284_{zh}-1.ipynb"}[lms]
    student = {None: "ann_lee", "canvas": "340934"}[lms]
    put(tmp_path / "up" / name, notebook("zh"))
    (why,) = refused(collect(tmp_path / "up", configured_course, lms=lms)).values()
    assert f"the pattern gives assignment '{zh}', not one of this course" in why
    assert f"did you mean '{EX1}'" in why
    class_languages(configured_course, "en", "zh")
    report = collect(tmp_path / "up", configured_course, lms=lms)
    assert report.collected == [(student, zh)] and report.refused == []
    assert arrived(configured_course) == {f"{student}/{zh}/{zh}.ipynb": notebook("zh")}


def test_nbgrader_zip_collect_reads_the_same_pattern_inside_grader(configured_course: Path):
    archive = Course.configured(configured_course).downloaded / EX1 / "archive"
    put(archive / f"bob_smith_{EX1}.ipynb", notebook("zip_collect"))
    before = {p.name for p in configured_course.iterdir()}
    command = [sys.executable, "-m", "nbgrader", "zip_collect", EX1, "--force"]
    result = subprocess.run(command, cwd=configured_course, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    target = Course.configured(configured_course).submitted / "bob_smith" / EX1 / f"{EX1}.ipynb"
    assert target.read_bytes() == notebook("zip_collect")
    assert {p.name for p in configured_course.iterdir()} == before, "zip_collect wrote in the root"


# ----------------------------------------------------------------------------- nbgrader's exchange


def inbound_folder(exchange: Path, name: str, files: dict[str, bytes]) -> Path:
    folder = exchange / COURSE_ID / "inbound" / name
    for path, content in files.items():
        put(folder / path, content)
    return folder


def hostile_inbound(exchange: Path, secrets: Path, ada: str = "ada") -> None:
    """ada's submissions: an honest first one, then a later one with links to the instructor's
    files and a back-dated timestamp.txt, and one named for bob."""
    put(secrets / "checks.py", b"HIDDEN CHECKS")
    put(secrets / "gradebook.db", b"EVERY GRADE")
    inbound_folder(exchange, f"{ada}+{EX1}+2026-01-01 10:00:00.000000 UTC+aaa", {
        f"{EX1}.ipynb": notebook("ada first"),
        "timestamp.txt": b"2026-01-01 10:00:00.000000 UTC",
    })  # fmt: skip
    later = inbound_folder(exchange, f"{ada}+{EX1}+2026-01-02 10:00:00.000000 UTC+bbb", {
        f"{EX1}.ipynb": notebook("ada second"),
        "timestamp.txt": b"2020-01-01 00:00:00.000000 UTC",  # back-dated
    })  # fmt: skip
    (later / "checks.py").symlink_to(secrets / "checks.py")
    (later / "gradebook.db").symlink_to(secrets / "gradebook.db")
    inbound_folder(exchange, f"bob+{EX1}+2026-01-03 10:00:00.000000 UTC+ccc", {
        f"{EX1}.ipynb": notebook("ada as bob"),
    })  # fmt: skip


def collect_exchange(exchange: Path, course: Path, owners: dict[int, str]) -> intake.Report:
    inbound = exchange / COURSE_ID / "inbound"
    return intake_exchange.collect_inbound(
        inbound, Course.configured(course).submitted, [EX1], owners.__getitem__
    )


def test_exchange_submissions_are_the_owners_with_the_system_time(tmp_path: Path, course: Path):
    exchange = tmp_path / "exchange"
    hostile_inbound(exchange, tmp_path / "instructor")
    put(Course.configured(course).submitted / "bob" / EX1 / f"{EX1}.ipynb", notebook("bob's own"))
    report = collect_exchange(exchange, course, {os.getuid(): "ada"})  # the test owns them all
    got = arrived(course)
    assert got[f"ada/{EX1}/{EX1}.ipynb"] == notebook("ada second")
    assert got[f"bob/{EX1}/{EX1}.ipynb"] == notebook("bob's own"), "a classmate's work replaced"
    assert not {b"HIDDEN CHECKS", b"EVERY GRADE"} & set(got.values())
    later = f"ada+{EX1}+2026-01-02 10:00:00.000000 UTC+bbb"
    problems = refused(report)
    assert "links are not followed" in problems[f"{later}/checks.py"]
    assert "links are not followed" in problems[f"{later}/gradebook.db"]
    assert "owned by 'ada'" in problems[f"bob+{EX1}+2026-01-03 10:00:00.000000 UTC+ccc"]
    # the time is the one the system recorded for the folder, not the back-dated claim
    system_time = intake_exchange.changed_at(exchange / COURSE_ID / "inbound" / later)
    assert got[f"ada/{EX1}/timestamp.txt"].decode().strip() == f"{system_time:{intake.TIME_FORMAT}}"
    assert any("timestamp.txt says 2020-01-01" in note for note in report.notes)
    assert report.collected == [("ada", EX1)]


def test_an_inbound_folder_of_an_unknown_owner_is_refused(tmp_path: Path, course: Path):
    inbound_folder(tmp_path / "exchange", f"ada+{EX1}+2026-01-01 10:00:00 UTC", {"a.ipynb": b"{}"})
    report = collect_exchange(tmp_path / "exchange", course, {})
    assert report.collected == [] and not arrived(course)
    assert f"but owned by 'uid {os.getuid()}'" in report.refused[0][1]


def test_an_inbound_folder_swapped_for_a_link_while_collected_is_not_followed(
    tmp_path: Path, course: Path, monkeypatch
):
    """The learner's process renames its checked folder away and puts a link to the
    instructor's files (or a classmate's folder) in its place before the copy: nothing of the
    link's target arrives."""
    exchange, secrets = tmp_path / "exchange", tmp_path / "instructor" / EX1
    put(secrets / "checks.py", b"HIDDEN CHECKS")
    put(secrets / f"{EX1}.ipynb", b"SOLUTIONS")
    folder = inbound_folder(exchange, f"ada+{EX1}+2026-01-01 10:00:00 UTC", {
        f"{EX1}.ipynb": notebook("ada"),
    })  # fmt: skip
    checked_at = intake_exchange.changed_at

    def swapped_after_the_check(path: Path):
        when = checked_at(path)
        if path == folder:
            folder.rename(tmp_path / "aside")
            folder.symlink_to(secrets)
        return when

    monkeypatch.setattr(intake_exchange, "changed_at", swapped_after_the_check)
    report = collect_exchange(exchange, course, {os.getuid(): "ada"})
    assert not {b"HIDDEN CHECKS", b"SOLUTIONS"} & set(arrived(course).values())
    assert report.collected == [] and "replaced by a link" in report.refused[0][1]


def test_an_inbound_file_the_submitter_does_not_own_is_not_copied(tmp_path: Path):
    """A hard link to someone else's file keeps that file's owner."""
    put(tmp_path / "theirs", b"NOT YOURS")
    with pytest.raises(OSError, match="owned by uid"):
        intake.open_regular(str(tmp_path / "theirs"), owner=os.getuid() + 1)
    assert intake.open_regular(str(tmp_path / "theirs"), owner=os.getuid()).read() == b"NOT YOURS"


def test_an_inbound_folder_changed_while_collected_gets_the_later_time(
    tmp_path: Path, course: Path, monkeypatch
):
    """A learner's process that sees the collect start (inotify) and writes a late answer into
    the folder between the time check and the copy: the copy's time is the later one."""
    exchange = tmp_path / "exchange"
    folder = inbound_folder(exchange, f"ada+{EX1}+2026-01-01 10:00:00 UTC", {
        f"{EX1}.ipynb": notebook("on time"),
    })  # fmt: skip
    walk, read = intake.walk_folder, intake_exchange.read_inbound

    def rewritten_first(root, *args, **kwargs):
        put(folder / f"{EX1}.ipynb", notebook("late"))
        return walk(root, *args, **kwargs)

    def checked_on_time(*args):  # the check saw the on-time folder (its time an hour back)
        return [replace(found, when=found.when - timedelta(hours=1)) for found in read(*args)]

    monkeypatch.setattr(intake_exchange, "read_inbound", checked_on_time)
    monkeypatch.setattr(intake_exchange, "walk_folder", rewritten_first)
    report = collect_exchange(exchange, course, {os.getuid(): "ada"})
    got = arrived(course)
    assert got[f"ada/{EX1}/{EX1}.ipynb"] == notebook("late")
    after = f"{intake_exchange.changed_at(folder):{intake.TIME_FORMAT}}"
    assert got[f"ada/{EX1}/timestamp.txt"].decode().strip() == after
    assert any("changed while it was collected" in note for note in report.notes)


def feedback_folder(course: Path, student: str, secret: bool) -> None:
    folder = Course.configured(course).feedback / student / EX1
    put(folder / f"{EX1}.html", f"<p>feedback for {student}</p>".encode())
    put(folder / "timestamp.txt", b"2026-01-01 10:00:00.000000 UTC")
    if secret:
        put(folder / "submission_secret.txt", f"secret of {student}".encode())


def test_feedback_reaches_every_exchange_student_and_names_the_uploads(
    configured_course: Path, capsys
):
    """The exchange's students get their feedback through it; LMS uploads (no secret) are named,
    and do not stop the others, whichever order they come in; also through nbgrader's command."""
    exchange = Course.configured(configured_course).exchange
    for student, secret in [("ada", True), ("canvas_123", False), ("zoe", True)]:
        feedback_folder(configured_course, student, secret)
    status = instructor.release_feedback(configured_course, [EX1])
    out = capsys.readouterr().out
    assert status == 1
    assert "canvas_123" in out and "no submission_secret.txt" in out
    outbound = exchange / COURSE_ID / "feedback"
    from nbgrader.utils import notebook_hash

    for student in ("ada", "zoe"):
        page = outbound / f"{notebook_hash(secret=f'secret of {student}', notebook_id=EX1)}.html"
        assert page.read_text() == f"<p>feedback for {student}</p>"
    assert len(list(outbound.iterdir())) == 2
    for path in outbound.iterdir():
        path.unlink()
    command = [sys.executable, "-m", "nbgrader", "release_feedback", EX1]
    done = subprocess.run(command, cwd=configured_course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "canvas_123" in done.stderr and len(list(outbound.iterdir())) == 2


def test_a_learner_written_feedback_folder_stops_only_its_own_release(tmp_path: Path):
    """The feedback folder holds the learner's submission_secret.txt and other files (nbgrader
    copies them): a secret that is not text, or a folder named *.html, is named, not a crash
    that stops the release for every student after it."""
    feedback = tmp_path / "feedback"
    for student in ("ada", "bob", "zoe"):
        folder = feedback / student / EX1
        put(folder / f"{EX1}.html", f"<p>{student}</p>".encode())
        put(folder / "submission_secret.txt", f"secret of {student}".encode())
    put(feedback / "ada" / EX1 / "submission_secret.txt", b"\xff\xfe")
    put(feedback / "bob" / EX1 / "notes.html" / "inside", b"a folder named .html")
    folders = sorted(feedback.glob(f"*/{EX1}"))
    result = instructor.class_exchange.release_feedback(folders, EX1, tmp_path / "outbound")
    assert [Path(page).parts[-3] for page in result.released] == ["bob", "zoe"]
    assert [Path(folder).parts[-2] for folder, _ in result.not_released] == ["ada"]


def test_typos_and_empty_inputs_fail_naming_the_right_ones(configured_course: Path, capsys):
    course = ["--course", str(configured_course)]
    with pytest.raises(SystemExit) as typo:
        course_grader.main([*course, "collect", "--assignment", "ex9"])
    assert typo.value.code == 2 and EX1 in capsys.readouterr().err
    (Course.configured(configured_course).exchange / COURSE_ID / "inbound").mkdir(parents=True)
    assert course_grader.main([*course, "collect"]) == 2
    out, err = capsys.readouterr()
    assert "no submission of" in err and not out  # no "collected 0" report before it
    assert course_grader.main([*course, "release-feedback"]) == 2
    out, err = capsys.readouterr()
    assert "make feedback" in err and not out  # no "released 0" line per exercise before it


def test_nbgrader_collect_uses_the_course_collector(configured_course: Path, tmp_path: Path):
    """`nbgrader collect` (the formgrader's Collect button) by the course's rules: links are not
    followed; a folder named for another account than its owner is refused."""
    exchange = Course.configured(configured_course).exchange
    me = pwd.getpwuid(os.getuid()).pw_name
    hostile_inbound(exchange, tmp_path / "instructor", ada=me)
    command = [sys.executable, "-m", "nbgrader", "collect", EX1]
    done = subprocess.run(command, cwd=configured_course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    got = arrived(configured_course)
    assert got[f"{me}/{EX1}/{EX1}.ipynb"] == notebook("ada second")
    assert set(got) == {f"{me}/{EX1}/{EX1}.ipynb", f"{me}/{EX1}/timestamp.txt"}
    assert "links are not followed" in done.stderr and "owned by" in done.stderr


# ----------------------------------------------------------------------------- learner HTML

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
HOSTILE_MARKDOWN = """<script>PWNED()</script> <b>bold</b> <img src=x onerror="PWNED()">
[link](javascript:PWNED()) <iframe src="http://example.org/"></iframe>
<svg><script>PWNED()</script></svg> <a href="https://example.org/">fine</a>

```
code

[after a blank line](javascript:PWNED())
```
"""


def hostile_notebook():
    import nbformat.v4 as nbf

    outputs = [
        nbf.new_output("display_data", {"text/html": '<img src=x onerror="PWNED()">'}),
        nbf.new_output("display_data", {"application/javascript": "PWNED()"}),
        nbf.new_output("display_data", {"image/svg+xml": "<svg><script>PWNED()</script></svg>"}),
        nbf.new_output("display_data", {"text/markdown": "[md](javascript:PWNED())"}),
        nbf.new_output("display_data", {"image/png": PNG}),
        # nbconvert writes an image's width and height into the page unquoted
        nbf.new_output("display_data", {"image/png": PNG}, metadata={"width": "1 onerror=PWNED()"}),
        nbf.new_output(
            "display_data",
            {"image/jpeg": PNG},
            metadata={"image/jpeg": {"height": "1 onload=PWNED()"}},
        ),
    ]
    pasted = nbf.new_markdown_cell("![pasted](attachment:a.png) ![gone](attachment:gone.png)")
    pasted["attachments"] = {"a.png": {"image/png": PNG}}  # as JupyterLab saves a pasted image
    cells = [
        nbf.new_markdown_cell(HOSTILE_MARKDOWN),
        nbf.new_code_cell("1", outputs=outputs),
        pasted,
    ]
    return nbf.new_notebook(cells=cells)


@pytest.mark.parametrize("template", ["feedback", "formgrade"])
def test_learner_html_is_shown_inert(configured_course: Path, template: str):
    """nbgrader's pages of a submission (the feedback, the formgrader's view) under the course's
    configuration: no script, handler, javascript: link, iframe or SVG of the learner's is left;
    their markup and images are."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(configured_course)).load_config()
    config.HTMLExporter.template_name = template
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    css = Path(handlers.static_path) / "node_modules" / "bootstrap" / "dist" / "css"
    config.HTMLExporter.extra_template_paths = [str(css)]  # as GenerateFeedback sets it
    nbgrader = {"notebook": "n", "score": 1, "max_score": 2, "late_penalty": 0, "student": "a"}
    resources = {"base_url": "", "submission_id": "s", "notebook_id": "n", "index": 0, "total": 1}
    resources["nbgrader"] = nbgrader
    html, _ = HTMLExporter(config=config).from_notebook_node(hostile_notebook(), resources)
    page = BeautifulSoup(html, "html.parser")
    assert not [tag for tag in page.find_all("script") if "PWNED" in tag.get_text()]
    cells = page.select(".cell")  # the template's own page has handlers of its own
    assert len(cells) == 3
    assert not [
        tag for cell in cells for tag in cell.find_all(["iframe", "svg", "object", "embed"])
    ]
    for tag in (tag for cell in cells for tag in cell.find_all(True)):
        assert not [name for name in tag.attrs if name.lower().startswith("on")], tag
        for name in ("href", "src"):
            assert not str(tag.get(name, "")).lower().startswith("javascript"), tag
    assert "<b>bold</b>" in html and f"data:image/png;base64,{PNG}" in html
    assert 'href="https://example.org/"' in html and "data:image/svg+xml;base64," in html


def test_a_feedback_folder_keeps_only_the_pages_made_from_notebooks(configured_course: Path):
    """The course's GenerateFeedback hook, called as nbgrader calls it after writing a
    student's feedback: the learner's own files (evil.html, a folder) are removed."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(configured_course)).load_config()
    hook = config.GenerateFeedback.post_convert_hook
    graded = Course.configured(configured_course).autograded / "ada" / EX1 / f"{EX1}.ipynb"
    folder = Course.configured(configured_course).feedback / "ada" / EX1
    put(folder / f"{EX1}.html", b"<p>made from the notebook</p>")
    put(folder / "submission_secret.txt", b"secret")
    put(folder / "evil.html", b"<script>PWNED()</script>")
    put(folder / "pages" / "more.svg", b"<svg><script>PWNED()</script></svg>")
    hook(assignment="*", student="*", notebooks=[str(graded)])
    assert {path.name for path in folder.iterdir()} == {f"{EX1}.html", "submission_secret.txt"}
