"""Handing freed memory back to the system between the large steps of a page.

glibc keeps memory that numpy and Arrow free for reuse by the same process; after a step that read
or copied millions of rows, much of it sits in the heap's holes and counts against the machine as
if still in use (the ten-model book's pages: about a gigabyte each). ``release_freed_memory`` hands
it back; where the C library is not glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import functools

import pyarrow as pa


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    try:
        library = ctypes.CDLL("libc.so.6")
        library.malloc_trim  # noqa: B018  (glibc has it; other C libraries do not)
        return library
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Return the memory that Arrow's pool and the C allocator hold free to the system."""
    pa.default_memory_pool().release_unused()
    library = _glibc()
    if library is not None:
        library.malloc_trim(0)
