"""What the tests that start processes share: a free loopback port, and the process tree read
from /proc (to show that stopping a server leaves nothing running). Defined once, with the
benchmarks' own readings of /proc, in benchtools/procfs.py."""

from benchtools.procfs import alive, children_of, descendants, free_port, memory_kib, reset_peak

__all__ = ["alive", "children_of", "descendants", "free_port", "memory_kib", "reset_peak"]
