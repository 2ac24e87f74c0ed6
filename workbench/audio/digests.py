"""The digest index: a file's content hash (SHA-256) remembered per (path, size, mtime).

In this process's memo and in the user cache (one small file per path, size and mtime), so a file
seen before is not hashed again: the review window finds a clip's pyramid cache entry, and the pool
step tells a stored analysis of the same content from a replaced file, with a ``stat`` instead of
reading every byte. A changed file has another size or mtime and is hashed again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

_DIGEST_MEMO_SIZE = 4096
_digest_memo: OrderedDict[tuple[str, int, int], str] = OrderedDict()
_digest_lock = threading.Lock()


def _stat_key(path: Path) -> tuple[str, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


def _index_file(key: tuple[str, int, int]) -> Path:
    from workbench.config import cache_dir

    name = hashlib.sha256("\0".join(map(str, key)).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    return cache_dir() / "digests" / name


def _remember(key: tuple[str, int, int], digest: str) -> None:
    with _digest_lock:
        _digest_memo[key] = digest
        _digest_memo.move_to_end(key)
        while len(_digest_memo) > _DIGEST_MEMO_SIZE:
            _digest_memo.popitem(last=False)


def known_digest(path: Path) -> str | None:
    """The file's content hash if it was hashed before with the same path, size and mtime.

    Looked up in this session's memo, then in the digest index under the user cache (one small
    file per path, size and mtime), so a clip opened in an earlier session reopens from the
    pyramid cache without hashing the whole file again (a 180 s 4-channel WAV is ~140 MB).
    None when unknown: the file is new here, or changed.
    """
    key = _stat_key(path)
    if key is None:
        return None
    with _digest_lock:
        digest = _digest_memo.get(key)
        if digest is not None:
            _digest_memo.move_to_end(key)
            return digest
    try:
        digest = _index_file(key).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        return None  # damaged: hash again
    _remember(key, digest)
    return digest


def file_digest(path: Path) -> str:
    """The file's content hash (the pyramid cache key), hashed once per (path, size, mtime).

    A changed file has another size or mtime and is hashed again. The digest is remembered
    for this session and in the digest index (see :func:`known_digest`).
    """
    from workbench.audio.loader import content_hash

    known = known_digest(path)
    if known is not None:
        return known
    key = _stat_key(path)
    digest = content_hash(path)  # raises the loader's clear error for a missing file
    if key is not None:
        _remember(key, digest)
        index = _index_file(key)
        try:
            index.parent.mkdir(parents=True, exist_ok=True)
            staging = index.with_name(f".{index.name}.{os.getpid()}.{threading.get_ident()}")
            staging.write_text(digest, encoding="ascii")
            os.replace(staging, index)
        except OSError:
            pass  # a read-only cache: the session memo still has it
    return digest
