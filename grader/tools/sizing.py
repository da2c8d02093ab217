"""Size a machine (or a cluster) for a class from measurements taken here: `make hub-sizing`.

    python -m grader.tools.sizing [--n 4] [--learners 200] [--submissions 200] [--cores 16]

Measures what the class costs, in CPU seconds and peak memory rather than wall time (which depends
on how busy this machine is), then prints the estimate with its arithmetic:

* grading: the sandboxed grader (grader/safegrade) grades N generated submissions of exercise 1
  with one worker, the way `make autograde` and the grading benchmark (`make bench-grading`) do;
* a learner: a kernel that imports torch and torchvision, traces ResNet-18 and runs it (chapter 4,
  the course's heaviest step), plus a Jupyter server with an idle course kernel.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from fxcourse.workspace import course_kernel
from grader.course import Course
from grader.tools.bench import make_course

# A learner's heaviest step: chapter 4 traces and runs ResNet-18.
LEARNER_KERNEL = """
import torch, torch.fx, torchvision
model = torchvision.models.resnet18().eval()
with torch.no_grad():
    torch.fx.symbolic_trace(model)(torch.randn(1, 3, 224, 224))
"""
# Runs a command and prints its CPU time and the peak memory of its largest process (in a process
# of its own, so one measurement's peak is not another's). As a subreaper it also collects what
# the sandboxed grader's workers leave when they are torn down, so their cost is counted too.
MEASURE = """
import ctypes, json, os, resource, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            time.sleep(0.1)
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": done.returncode, "tail": (done.stdout + done.stderr)[-3000:],
                  "cpu_s": usage.ru_utime + usage.ru_stime, "peak_kib": usage.ru_maxrss}))
"""
GIB = 1024


@dataclass
class Cost:
    cpu_s: float  # user + system CPU seconds
    peak_mib: float  # the largest single process's peak resident memory


def measure(command: list[str], cwd: Path, env: dict | None = None) -> Cost:
    """Run `command` to its end; its CPU time and the peak memory of its largest process."""
    wrapper = [sys.executable, "-c", MEASURE, *command]
    done = subprocess.run(wrapper, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    if result["code"] != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{result['tail']}")
    return Cost(result["cpu_s"], result["peak_kib"] / 1024)  # Linux reports KiB


def server_mib(base: Path) -> float:
    """Resident memory of a Jupyter server with one idle course kernel (what an idle learner
    holds), summed over its processes."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token, url = secrets.token_hex(16), f"http://127.0.0.1:{port}/api/kernels"
    env = dict(os.environ, HOME=str(base))  # its runtime and settings files go there
    command = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser"]
    command += [f"--port={port}", f"--IdentityProvider.token={token}", f"--notebook-dir={base}"]
    command += ["--allow-root"] if os.geteuid() == 0 else []
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        start_kernel(url, token)
        time.sleep(10)  # the kernel starts up
        return sum(rss_mib(pid) for pid in [server.pid, *descendants(server.pid)])
    finally:
        server.terminate()
        server.wait(30)


def start_kernel(url: str, token: str, timeout_s: float = 180) -> None:
    request = urllib.request.Request(
        url, method="POST", data=json.dumps({"name": course_kernel()["name"]}).encode()
    )
    request.add_header("Authorization", f"token {token}")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(request, timeout=5).read()
            return
        except OSError:  # not listening yet
            time.sleep(0.5)
    raise SystemExit(f"jupyter lab did not start a kernel in {timeout_s} s")


def descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children] + [d for c in children for d in descendants(int(c))]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def grading_cost(n: int, base: Path) -> Cost:
    """Per submission: the sandboxed grader on n submissions of the first exercise, one worker."""
    assignment = Course.configured().exercises[0]
    course = make_course(base, assignment, n)
    command = [sys.executable, "-m", "grader.safegrade", "autograde", assignment]
    command += ["--workers=1", "--force"]
    total = measure(command, course, dict(os.environ, PYTHONPATH=str(course)))
    return Cost(total.cpu_s / n, total.peak_mib)


def learner_cost(base: Path) -> Cost:
    return measure([sys.executable, "-c", LEARNER_KERNEL], base)


def report(grading: Cost, learner: Cost, idle_mib: float, args: argparse.Namespace) -> list[str]:
    kernel_gib = learner.peak_mib / GIB
    per_learner_gib = (learner.peak_mib + idle_mib) / GIB
    active = math.ceil(args.learners * args.active)
    grade_cpu = grading.cpu_s * args.submissions
    workers = args.cores
    return [
        "measured here:",
        f"  grading one submission (sandboxed): {grading.cpu_s:.1f} CPU-s, "
        f"peak {grading.peak_mib:.0f} MiB per worker",
        f"  a learner's server with an idle kernel: {idle_mib:.0f} MiB",
        f"  a learner's kernel (chapter 4): {learner.cpu_s:.1f} CPU-s, peak {kernel_gib:.2f} GiB;"
        f" with the server {per_learner_gib:.2f} GiB",
        f"{args.learners} learners, {args.active:.0%} running a kernel at once ({active}):",
        f"  memory: {active} x {per_learner_gib:.2f} GiB = {active * per_learner_gib:.0f} GiB",
        f"  CPU when they all run chapter 4's cell within a minute: {active} x "
        f"{learner.cpu_s:.1f} CPU-s / 60 s = {active * learner.cpu_s / 60:.0f} cores",
        f"grading {args.submissions} submissions with {workers} workers on {args.cores} cores:",
        f"  CPU: {args.submissions} x {grading.cpu_s:.1f} CPU-s = {grade_cpu:.0f} CPU-s;"
        f" / {workers} workers = {grade_cpu / workers / 60:.1f} min",
        f"  memory: {workers} x {grading.peak_mib:.0f} MiB = "
        f"{workers * grading.peak_mib / GIB:.1f} GiB",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4, help="submissions to grade (default 4)")
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--active", type=float, default=1.0, help="share with a kernel at once")
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--cores", type=int, default=16, help="cores (= workers) for grading")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="hub-sizing-"))
    try:
        grading = grading_cost(args.n, base / "course")
        learner = learner_cost(base)
        idle_mib = server_mib(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("\n".join(report(grading, learner, idle_mib, args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
