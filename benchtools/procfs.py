"""What the benchmarks and the tests that start processes share, defined once: a free loopback
port, and a process's tree, state, memory and CPU time read from Linux's /proc."""

import os
import socket
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback port nothing listens on (the OS picks it; free again once the probe closes)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces): state is
    [0], the parent [1], user and system CPU ticks [11] and [12], those of its children that
    exited and were waited for [13] and [14]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _parents() -> dict[int, int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(_stat_fields(entry.name)[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    return parents


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (gunicorn's workers of its master)."""
    return sorted(child for child, parent in _parents().items() if parent == pid)


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting to be reaped."""
    try:
        return _stat_fields(pid)[0] != "Z"
    except OSError:
        return False


def memory_kib(pid: int) -> dict[str, int]:
    """The process's resident memory now (VmRSS) and at its peak (VmHWM), in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux clear_refs "5")."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, its threads included."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """CPU time spent so far by `pid` and every process below it: the live ones (gunicorn's
    master and its workers, threads included) and the ones that exited and were waited for (a
    gunicorn worker recycled after `max_requests` adds its time to its master's)."""
    spent = 0.0
    for member in {pid} | descendants(pid):
        try:
            fields = _stat_fields(member)
        except OSError:
            continue  # gone meanwhile
        try:
            spent += sum(int(fields[index]) for index in (11, 12, 13, 14)) / CLOCK_TICKS
        except (IndexError, ValueError):
            continue
    return spent
