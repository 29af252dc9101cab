"""Image type sniffing by content (the read tool sends these as image blocks)."""

from __future__ import annotations

import struct

SNIFF_BYTES = 4100
_PNG = b"\x89PNG\r\n\x1a\n"


def sniff_image_mime(head: bytes) -> str | None:
    """``image/<type>`` for png (not animated), jpeg, gif, webp, bmp; None otherwise."""
    if head.startswith(b"\xff\xd8\xff"):
        return None if len(head) > 3 and head[3] == 0xF7 else "image/jpeg"
    if head.startswith(_PNG):
        return "image/png" if _is_still_png(head) else None
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:2] == b"BM" and _is_bmp(head):
        return "image/bmp"
    return None


def _is_still_png(head: bytes) -> bool:
    if len(head) < 16 or struct.unpack(">I", head[8:12])[0] != 13 or head[12:16] != b"IHDR":
        return False
    offset = len(_PNG)
    while offset + 8 <= len(head):
        length = struct.unpack(">I", head[offset : offset + 4])[0]
        kind = head[offset + 4 : offset + 8]
        if kind == b"acTL":
            return False
        if kind == b"IDAT":
            return True
        nxt = offset + 12 + length
        if nxt <= offset or nxt > len(head):
            return True
        offset = nxt
    return True


def _is_bmp(head: bytes) -> bool:
    if len(head) < 26:
        return False
    file_size, pixel_offset, dib_size = struct.unpack("<I", head[2:6])[0], *struct.unpack("<II", head[10:18])
    if file_size != 0 and file_size < 26:
        return False
    if pixel_offset < 14 + dib_size or (file_size != 0 and pixel_offset >= file_size):
        return False
    if dib_size == 12:
        planes, bits = struct.unpack("<HH", head[22:26])
    elif 40 <= dib_size <= 124:
        if len(head) < 30:
            return False
        planes, bits = struct.unpack("<HH", head[26:30])
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)
