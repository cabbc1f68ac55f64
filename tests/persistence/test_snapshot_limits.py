"""Reading a forged snapshot is bounded: no inflation, no deep recursion, no huge allocation.

Each forged payload gets a valid header and checksum (anyone can recompute them), so only
the payload checks stand between it and the process: every case must end in a clean
``MEMORY_SNAPSHOT_INVALID`` with memory far below what the payload claims.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory import MemoryEngine
from f09_memory.errors import ErrorCode, InputInvalidError, MemoryEngineError
from f09_memory.persistence import snapshot
from f09_memory.persistence.snapshot import MAX_DEPTH, _json_depth

MIB = 2**20


def framed(payload: bytes) -> bytes:
    """Snapshot bytes around ``payload`` with a valid header and checksum."""
    return (snapshot.MAGIC + f"version {snapshot.SNAPSHOT_VERSION}\n".encode()
            + f"sha256 {hashlib.sha256(payload).hexdigest()}\n".encode()
            + f"length {len(payload)}\n".encode() + payload)


def npy(arr: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, arr)
    return out.getvalue()


def zipped(members: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compress) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def manifest_member(text: bytes) -> bytes:
    return npy(np.frombuffer(text, dtype=np.uint8))


def refused(data: bytes, needle: str, limit_mib: int = 32, **kwargs: Any) -> None:
    """``loads(data)`` is refused naming ``needle``, peaking below ``limit_mib`` MiB."""
    tracemalloc.start()
    try:
        with pytest.raises(MemoryEngineError) as info:
            snapshot.loads(data, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code
    assert needle in info.value.message
    assert peak < limit_mib * MIB


def test_a_compressed_member_is_never_inflated() -> None:
    """A deflated .npy declaring 120 MiB of zeros (about 0.1 MB on disk), like a zip bomb."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<i8", "fortran_order": False, "shape": (15 * MIB,)})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("manifest.npy", manifest_member(b"{}"))
        info = zipfile.ZipInfo("ring.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as fh:
            fh.write(header.getvalue())
            zeros = bytes(MIB)
            for _ in range(15 * 8):
                fh.write(zeros)
    payload = out.getvalue()
    assert len(payload) < MIB
    refused(framed(payload), "compressed")


def test_a_header_claiming_more_data_than_it_has_allocates_nothing() -> None:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    payload = zipped({"manifest.npy": manifest_member(b"{}"),
                      "vectors.npy": header.getvalue() + bytes(64)})
    refused(framed(payload), "does not match its declared shape")


def _duplicate_central_entry(payload: bytes, new_name: bytes) -> bytes:
    """The zip with its last member listed twice (the copy renamed): overlapping members."""
    end = payload.rindex(b"PK\x05\x06")
    entries, cd_size, cd_offset = struct.unpack("<HII", payload[end + 10:end + 20])
    last = payload.rindex(b"PK\x01\x02", cd_offset, end)
    name_len = struct.unpack("<H", payload[last + 28:last + 30])[0]
    assert len(new_name) == name_len
    copy = payload[last:last + 46] + new_name + payload[last + 46 + name_len:end]
    tail = payload[end:end + 8] + struct.pack("<HHII", entries + 1, entries + 1,
                                              cd_size + len(copy), cd_offset) + payload[end + 20:]
    return payload[:end] + copy + tail


def test_members_that_overlap_are_refused() -> None:
    big = npy(np.zeros(MIB // 8, dtype=np.int64))
    payload = zipped({"manifest.npy": manifest_member(b"{}"), "a.npy": big})
    forged = _duplicate_central_entry(payload, b"b.npy")
    refused(framed(forged), "overlap")


@pytest.mark.parametrize(("members", "needle"), [
    ({"manifest.npy": manifest_member(b"{}"), "x.npy": npy(np.array([object()]))},
     "not plain numeric"),
    ({"manifest.npy": manifest_member(b"{}"), "x.txt": b"hello"}, "not a .npy array"),
    ({"manifest.npy": manifest_member(b"{}"), "x.npy": npy(np.zeros(2, dtype="U3"))},
     "not plain numeric"),
    ({"manifest.npy": manifest_member(b"[1, 2]")}, "not a JSON object"),
    ({"manifest.npy": manifest_member(b"{\"a\": " + b"1" * 10_000 + b"}")},
     "unreadable payload"),
    ({"manifest.npy": manifest_member(b"\xff{}")}, "unreadable payload"),
    ({"x.npy": npy(np.zeros(3))}, "no manifest"),
    ({"manifest.npy": manifest_member(json.dumps(
        {"a": {"__ndarray__": "AAAA", "dtype": "<i8", "shape": [5]}}).encode())},
     "do not match its shape"),
    ({"manifest.npy": manifest_member(json.dumps(
        {"a": {"__ndarray__": "AAAA", "dtype": "|O", "shape": [1]}}).encode())},
     "not plain numeric"),
    ({"manifest.npy": manifest_member(json.dumps(
        {"a": {"__ndarray__": "%%%%", "dtype": "|u1", "shape": [3]}}).encode())},
     "not valid base64"),
    ({"manifest.npy": manifest_member(json.dumps(
        {"a": {"__ndarray__": "AAAA", "dtype": "|u1", "shape": [-3]}}).encode())},
     "malformed shape"),
])
def test_malformed_members_are_refused_naming_the_problem(members: dict[str, bytes],
                                                          needle: str) -> None:
    refused(framed(zipped(members)), needle)


@pytest.mark.parametrize("opening", [b"[", b"{\"a\":", b"[{\"a\":"])
def test_deeply_nested_json_is_refused_before_parsing(tmp_path: Path, opening: bytes) -> None:
    closing = {b"[": b"]", b"{\"a\":": b"}", b"[{\"a\":": b"}]"}[opening]
    deep = opening * 100_000 + b"1" + closing * 100_000
    data = framed(zipped({"manifest.npy": manifest_member(deep)}))
    refused(data, f"nests deeper than {MAX_DEPTH}")
    path = tmp_path / "deep.f09"
    path.write_bytes(data)
    with pytest.raises(MemoryEngineError, match="nests deeper"):
        MemoryEngine.load(path)


def test_nesting_up_to_the_limit_parses() -> None:
    ok = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    snap_bytes = framed(zipped({"manifest.npy": manifest_member(b"{\"a\":" + ok + b"}")}))
    with pytest.raises(MemoryEngineError, match=f"nests deeper than {MAX_DEPTH}"):
        snapshot.loads(snap_bytes)  # one more level: the object around it
    inner = b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1)
    snap = snapshot.loads(framed(zipped({"manifest.npy": manifest_member(
        b"{\"a\":" + inner + b"}")})))
    assert "a" in snap.manifest


def _nested(depth: int) -> Any:
    value: Any = "[{]}\"\\"
    for i in range(depth):
        value = [value] if i % 2 else {"k\\\"[": value}
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet="[]{}\"\\ab,:"),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(alphabet="[]{}\"\\ab", max_size=4), inner, max_size=4),
    max_leaves=30)


def _reference_depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_reference_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_json_depth_matches_the_parsed_nesting(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert _reference_depth(value) == _json_depth(np.frombuffer(text, dtype=np.uint8))


def test_json_depth_ignores_brackets_and_escaped_quotes_in_strings() -> None:
    text = json.dumps(_nested(9)).encode()
    assert 9 == _json_depth(np.frombuffer(text, dtype=np.uint8))


def _engine_file(tmp_path: Path) -> Path:
    engine = MemoryEngine(embedder=None)
    engine.ingest_many("a", [f"line {i}" for i in range(50)], now=0)
    return engine.save(tmp_path / "s.f09")


@pytest.mark.parametrize("read", [
    lambda path, limit: snapshot.read_snapshot(path, max_bytes=limit),
    lambda path, limit: snapshot.loads(path.read_bytes(), path, max_bytes=limit),
    lambda path, limit: MemoryEngine.load(path, max_bytes=limit),
])
def test_a_payload_above_max_bytes_is_refused_unread(
        tmp_path: Path, read: Callable[[Path, int], object]) -> None:
    path = _engine_file(tmp_path)
    with pytest.raises(MemoryEngineError) as info:
        read(path, 1_000)
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code
    assert "above the limit of 1000" in info.value.message
    assert "max_bytes" in info.value.message
    read(path, path.stat().st_size)  # the whole file fits: it loads


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "big"])
def test_a_bad_max_bytes_is_an_input_error(tmp_path: Path, limit: object) -> None:
    path = _engine_file(tmp_path)
    with pytest.raises(InputInvalidError):
        snapshot.read_snapshot(path, max_bytes=limit)  # type: ignore[arg-type]


def test_loading_a_good_snapshot_stays_within_a_few_times_its_size(tmp_path: Path) -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_many("a", [f"a longer line of text number {i}" for i in range(5_000)], now=0)
    path = engine.save(tmp_path / "s.f09")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        snapshot.read_snapshot(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * size + MIB
