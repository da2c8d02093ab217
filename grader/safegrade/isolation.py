"""How a submission's process shuts itself in (run by the forked child, before its job).

Its own user, IPC and mount namespaces (so its SysV objects, /tmp and /dev/shm are its own and
vanish with it), no capabilities, resource limits and a seccomp filter. Nothing here reads the
submission: the child calls these before it reads its job from the grader.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct

from .grading_limits import LIMITS

KEEP: list[str] = []  # folders bound under /tmp (the Python installation of a checkout there)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000
libc = ctypes.CDLL(None, use_errno=True)


def set_dumpable(flag: int) -> None:
    pr_set_dumpable = 4
    if libc.prctl(pr_set_dumpable, flag, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def isolate(tmp_mb: int) -> None:
    """Own user, IPC and mount namespaces; a fresh /tmp and /dev/shm; no capabilities left."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNS), "unshare")
    # Opened in the new namespace: a bind mount's source must be a mount of our own namespace.
    kept = [os.open(path, os.O_PATH) for path in KEEP]
    set_dumpable(1)  # our /proc/self files belong to root while we are not dumpable
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    for name, text in (("gid_map", f"{gid} {gid} 1"), ("oom_score_adj", "1000")):
        with open(f"/proc/self/{name}", "w") as handle:  # the OOM killer takes us, not PID 1
            handle.write(text)
    set_dumpable(0)
    for folder, mb in (("/tmp", tmp_mb), ("/dev/shm", LIMITS.shm_mb)):
        options, flags = f"size={mb}m,mode=1777".encode(), MS_NOSUID | MS_NODEV
        check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", flags, options), folder)
    for path, fd in zip(KEEP, kept, strict=True):  # bound again over the new /tmp, read-only
        os.makedirs(path, mode=0o755, exist_ok=True)
        source = f"/proc/self/fd/{fd}".encode()
        check(libc.mount(source, path.encode(), None, MS_BIND | MS_REC, None), path)
        os.close(fd)
    drop_capabilities()


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def drop_capabilities() -> None:
    """Our capabilities (full, in our new user namespace) all cleared."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def set_limits(limits: dict) -> None:
    memory = limits["memory_mb"] << 20
    if limits["memory_cgroup"]:  # the cgroup counts everything; this makes a MemoryError first
        memory_limit = (resource.RLIMIT_DATA, memory)
    else:  # no cgroup: address space, which counts shared mappings too
        memory_limit = (resource.RLIMIT_AS, memory + address_space())
    for limit, value in (
        memory_limit,
        (resource.RLIMIT_NPROC, limits["nproc"]),
        (resource.RLIMIT_FSIZE, limits["file_mb"] << 20),
        (resource.RLIMIT_NOFILE, LIMITS.open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, int(limits["budget"]) + 1),
    ):
        resource.setrlimit(limit, (value, value))


def address_space() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmSize:"))
    return int(line.split()[1]) << 10


# x86_64 system calls refused with EPERM: ptrace, syslog, pivot_root, chroot, acct, mount,
# umount2, swapon/off, reboot, iopl, ioperm, (f)init/delete_module, quotactl, kexec, keys,
# unshare, setns, perf_event_open, handles, process_vm_*, bpf, userfaultfd, io_uring, new mount
# API; clone with a namespace flag; clone3 (ENOSYS: libraries fall back to clone).
_DENIED = (101, 103, 155, 161, 163, 165, 166, 167, 168, 169, 172, 173, 175, 176, 179, 246, 248)
_DENIED += (249, 250, 272, 298, 303, 304, 308, 310, 311, 313, 320, 321, 323, 425, 426, 427, 428)
_DENIED += (429, 430, 431, 432, 433, 442)
_CLONE, _CLONE3 = 56, 435
_NEW_NAMESPACES = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME


def seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter (x86_64 only; None elsewhere)."""
    if platform.machine() != "x86_64":
        return None
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, kill, eperm, enosys = 0x7FFF0000, 0x80000000, 0x00050001, 0x00050026
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, 0xC000003E), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    prog += [(0x35, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 system calls
    for number in _DENIED:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    prog += [(jeq, 0, 1, _CLONE3), (ret, 0, 0, enosys), (jeq, 0, 3, _CLONE), (ld, 0, 0, 16)]
    prog += [(jset, 0, 1, _NEW_NAMESPACES), (ret, 0, 0, eperm), (ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in prog)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp() -> None:
    program = seccomp_program()
    if program is None:
        return
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.addressof(buffer))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    check(libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0), "no_new_privs")
    check(libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0), "seccomp")
