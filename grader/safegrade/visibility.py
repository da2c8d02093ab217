"""What a sandbox can see: read-only system folders, the Python installation (its prefixes), and
the grader's sandbox package, installed into a site folder of its own. Never a checkout.

An editable install (``pip install -e``) points into a checkout, where the course, its sources
and its class data live; a venv may even be an editable install of another checkout than the
course it grades. So no folder an installation points to is bound: only the interpreter's
prefixes (a venv and its base) and ``site_folder()``, a private copy of this package made when
the first sandbox starts, bound at ``SITE_IN_SANDBOX``. The course's own code reaches a sandbox
only as that copy; the exercise's files reach a job as its data (preprocessors.py).
"""

from __future__ import annotations

import atexit
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .grading_limits import LIMITS

PACKAGE_DIR = Path(__file__).resolve().parent
SITE_IN_SANDBOX = "/opt/safegrade"
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "fonts")
ENV = dict(PATH="/usr/local/bin:/usr/bin:/bin", HOME="/tmp/home", TMPDIR="/tmp", USER="sandbox")
ENV |= dict(LANG="C.UTF-8", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
ENV |= dict(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLCONFIGDIR="/tmp/home/.mpl")
_site: dict[str, str] = {}  # "path": the site folder while one exists
_site_holders = [0]  # pools open now (a server grades one notebook at a time, for years)
_site_lock = threading.Lock()


def python_folders() -> list[str]:
    """The folders of this interpreter's installation: its prefixes, and nothing an editable
    install or a .pth file points to."""
    query = (
        "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, "
        "sys.exec_prefix, sys.base_exec_prefix]))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", query], capture_output=True, text=True, check=True
    )
    ordered = sorted({os.path.realpath(p) for p in json.loads(done.stdout)})
    return [f for f in ordered if not any(f.startswith(o.rstrip("/") + "/") for o in ordered)]


def site_folder() -> str:
    """A folder holding this package, installed (copied, byte-compiled, world-readable) as
    ``grader/safegrade``: made when first needed, removed when the last pool that held it closes
    (release_site), or when the process exits."""
    with _site_lock:
        if os.path.isdir(_site.get("path", "")):
            return _site["path"]
        site = tempfile.mkdtemp(prefix="safegrade-site-")
        atexit.register(shutil.rmtree, site, ignore_errors=True)
        target = Path(site, "grader", "safegrade")
        target.mkdir(parents=True)
        for module in sorted(PACKAGE_DIR.glob("*.py")):
            shutil.copyfile(module, target / module.name)
        compileall.compile_dir(target, quiet=1)
        for folder, _, files in os.walk(site):  # the sandbox's uid is not ours when we are root
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        _site["path"] = site
        return site


def hold_site() -> None:
    with _site_lock:
        _site_holders[0] += 1


def release_site() -> None:
    """One holder fewer; the site folder is removed with the last (made again when needed)."""
    with _site_lock:
        _site_holders[0] -= 1
        if _site_holders[0] == 0 and "path" in _site:
            shutil.rmtree(_site.pop("path"), ignore_errors=True)


def bwrap_argv(bwrap: str, folders: list[str], uid: int | None, extra: list[str]) -> list[str]:
    """The command that starts a template: bwrap (at `bwrap`) showing `folders` read-only."""
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--as-pid-1", "--die-with-parent", "--new-session"]
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid else ["--unshare-user"]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for key, value in ENV.items():
        argv += ["--setenv", key, value]
    argv += system_folders()
    # tmpfs first, binds after: a venv that lives under /tmp is then mounted over the new /tmp.
    # The template's own; each submission's process mounts its own /tmp and /dev/shm over them.
    argv += ["--perms", "1777", "--size", str(LIMITS.template_tmp_bytes), "--tmpfs", "/tmp"]
    argv += ["--perms", "1777", "--size", str(LIMITS.template_shm_bytes), "--tmpfs", "/dev/shm"]
    made = {"/tmp", "/dev", "/dev/shm", "/etc", "/proc"}
    for dest in [*folders, SITE_IN_SANDBOX]:
        for parent in reversed(Path(dest).parents):  # bwrap would create them as 0700
            if str(parent) not in made and str(parent) != "/":
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
    for folder in folders:
        argv += ["--ro-bind", folder, folder]
    argv += ["--ro-bind", site_folder(), SITE_IN_SANDBOX, *extra, "--remount-ro", "/"]
    # The interpreter through real folders, not resolved: a venv's python links to its base.
    python = os.path.join(os.path.realpath(os.path.dirname(sys.executable)), "python3")
    start = (
        f"import sys; sys.path.insert(0, {SITE_IN_SANDBOX!r}); from grader.safegrade import worker"
    )
    command = [python, "-I", "-X", "utf8", "-c", f"{start}; worker.main()"]
    return argv + ["--chdir", "/tmp", "--", *command]


def system_folders() -> list[str]:
    """bwrap arguments for /usr, the /bin and /lib links or folders, a few files of /etc."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            argv += ["--ro-bind", f"/{name}", f"/{name}"]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return argv + ["--dev", "/dev", "--proc", "/proc"]
