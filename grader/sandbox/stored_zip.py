"""Read a zip whose records are all stored (uncompressed), as `torch.save` writes them.

The reader takes nothing on trust: the record count is read from the end record before any
entry is parsed, every entry must be stored (a deflated one, a decompression bomb, is refused
without inflating a byte) and must lie inside the archive without overlapping another. Zip64
values, comments, encryption and multi-disk archives, which torch.save never writes for an
answer, are refused. The writer lays the checked records out again, so the next reader (torch's
own) sees exactly these records, whatever it would have made of the original bytes.
"""
from __future__ import annotations

import struct

END = struct.Struct("<4s4H2LH")  # signature, disk, cd disk, entries here, entries, cd size, cd offset, comment
CENTRAL = struct.Struct("<4s6H3L5H2L")  # flags 3, method 4, crc 7, sizes 8/9, name/extra/comment 10-12, offset 16
LOCAL = struct.Struct("<4s5H3L2H")  # method 3, name/extra lengths 9/10
STORED = 0


class ZipRefused(Exception):
    """Not a plain stored zip within the limits."""


def read_stored(data: bytes, max_records: int) -> dict[str, tuple[int, bytes]]:
    """Record name -> (CRC-32 as declared, bytes) for an archive of at most `max_records` records."""
    if len(data) < END.size:
        raise ZipRefused("too short for a zip")
    signature, disk, cd_disk, here, count, cd_size, cd_offset, comment = END.unpack_from(data, len(data) - END.size)
    if signature != b"PK\x05\x06" or comment or disk or cd_disk or here != count:
        raise ZipRefused("no plain end record (a comment, several disks, or not a zip)")
    if count > max_records:
        raise ZipRefused(f"{count} records, above {max_records}")
    if cd_offset + cd_size > len(data) - END.size:
        raise ZipRefused("a central directory outside the archive")
    entries = []  # (local header offset, data start, size, name, crc)
    at = cd_offset
    for _ in range(count):
        if at + CENTRAL.size > cd_offset + cd_size:
            raise ZipRefused("a central directory shorter than its count")
        fields = CENTRAL.unpack_from(data, at)
        flags, method, crc, packed, size, offset = fields[3], fields[4], fields[7], fields[8], fields[9], fields[16]
        name = data[at + CENTRAL.size:at + CENTRAL.size + fields[10]]
        shown = name.decode("utf-8", "replace")
        at += CENTRAL.size + fields[10] + fields[11] + fields[12]
        if fields[0] != b"PK\x01\x02" or method != STORED or flags & 0x1 or packed != size:
            raise ZipRefused(f"the record {shown!r} is compressed or encrypted (torch.save stores)")
        if offset + LOCAL.size > cd_offset:
            raise ZipRefused(f"the record {shown!r} starts outside the archive")
        local = LOCAL.unpack_from(data, offset)
        start = offset + LOCAL.size + local[9] + local[10]
        if local[0] != b"PK\x03\x04" or local[3] != STORED or data[offset + LOCAL.size:offset + LOCAL.size + local[9]] != name:
            raise ZipRefused(f"the record {shown!r} disagrees with its local header")
        if start + size > cd_offset:
            raise ZipRefused(f"the record {shown!r} runs past the archive")
        entries.append((offset, start, size, name, crc))
    # Checked before any record is copied: overlapping records could repeat one big span a thousand times.
    spans = sorted((offset, start + size) for offset, start, size, _, _ in entries)
    if any(end > next_offset for (_, end), (next_offset, _) in zip(spans, spans[1:])):
        raise ZipRefused("records that overlap")
    try:
        records = {name.decode("utf-8"): (crc, data[start:start + size]) for _, start, size, name, crc in entries}
    except UnicodeDecodeError as error:
        raise ZipRefused("a record name that is not UTF-8") from error
    # torch.save never writes two names that differ only in case (zip readers that ignore case would
    # read either one)
    if len({name.casefold() for name in records}) != len(entries):
        raise ZipRefused("a record name used twice (ignoring case)")
    return records

