"""The read tool: offsets, limits, notices, images, errors."""

import base64
import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools
from pi_coding_agent.coding.tools.images import ImageLimits, ImagePolicy


async def read(cwd: Path, env: ToolEnv | None = None, **params: Any) -> ToolResult:
    tool = create_builtin_tools(env or ToolEnv(cwd=cwd))["read"]
    return await tool.execute("t", params, AbortSignal(), lambda _: None)


def text_of(result: ToolResult) -> str:
    block = result.content[0]
    assert block["type"] == "text"
    return block["text"]


def image_of(result: ToolResult) -> dict[str, Any]:
    block = result.content[1]
    assert block["type"] == "image"
    return dict(block)


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0\0\0\0")) + chunk(b"IEND", b"")


async def test_reads_text_without_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await read(tmp_path, path="a.txt")
    assert text_of(result) == "one\ntwo\n"
    assert result.details is None


async def test_structured_content_is_the_text(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    result = await read(tmp_path, path="a.txt", limit=1)
    assert result.structured_content == text_of(result)
    assert result.to_wire()["structuredContent"].startswith("alpha")


async def test_strips_at_prefix_and_keeps_bom(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbfhello")
    assert text_of(await read(tmp_path, path="@b.txt")) == "\ufeffhello"


async def test_offset_and_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("\n".join(f"l{i}" for i in range(1, 11)))
    result = await read(tmp_path, path="n.txt", offset=3, limit=2)
    assert text_of(result) == "l3\nl4\n\n[6 more lines in file. Use offset=5 to continue.]"


async def test_offset_beyond_end_counts_trailing_empty_line(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("a\nb\n")
    with pytest.raises(ToolError, match=r"^Offset 5 is beyond end of file \(3 lines total\)$"):
        await read(tmp_path, path="s.txt", offset=5)


async def test_line_cap_notice(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("\n".join(str(i) for i in range(1, 2501)))
    result = await read(tmp_path, path="big.txt")
    text = text_of(result)
    assert text.endswith("\n2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    assert result.details["truncation"]["truncatedBy"] == "lines"
    assert result.details["truncation"]["totalLines"] == 2500


async def test_byte_cap_notice_with_offset(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("\n".join("w" * 1000 for _ in range(200)))
    text = text_of(await read(tmp_path, path="wide.txt", offset=11))
    assert text.endswith("\n\n[Showing lines 11-61 of 200 (50.0KB limit). Use offset=62 to continue.]")


async def test_first_line_over_cap_points_to_bash(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("x" * 60000 + "\nshort\n")
    result = await read(tmp_path, path="long.txt")
    assert text_of(result) == (
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' long.txt | head -c 51200]"
    )
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


async def test_missing_file_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await read(tmp_path, path="nope.txt")
    assert str(info.value) == f"ENOENT: no such file or directory, access '{tmp_path / 'nope.txt'}'"


async def test_directory_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^EISDIR: illegal operation on a directory, read$"):
        await read(tmp_path, path=".")


async def test_binary_file_is_decoded_leniently(tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"ab\xff\xfecd")
    assert text_of(await read(tmp_path, path="bin.dat")) == "ab\ufffd\ufffdcd"


async def test_png_is_returned_as_image_block(tmp_path: Path) -> None:
    data = png_bytes()
    (tmp_path / "pic.bin").write_bytes(data)  # detection is by content, not extension
    result = await read(tmp_path, path="pic.bin")
    assert result.content[0] == {"type": "text", "text": "Read image file [image/png]"}
    assert result.content[1] == {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"}
    assert result.structured_content == {"type": "image", "data": base64.b64encode(data).decode(),
                                         "mimeType": "image/png", "note": "Read image file [image/png]"}
    assert result.details is None


async def test_image_for_text_only_model_is_flagged(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(png_bytes())
    env = ToolEnv(cwd=tmp_path, model_accepts_images=lambda: False, session_env=lambda: {"PI_MODEL": "m-text"})
    result = await read(tmp_path, env, path="pic.png")
    assert result.details == {"imageUnsupportedByModel": "m-text"}


def picture(fmt: str, size: tuple[int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.linear_gradient("L").resize(size).convert("RGB").save(out, fmt)
    return out.getvalue()


async def test_gif_and_jpeg_magic(tmp_path: Path) -> None:
    (tmp_path / "g").write_bytes(picture("GIF", (8, 8)))
    (tmp_path / "j").write_bytes(picture("JPEG", (8, 8)))
    assert image_of(await read(tmp_path, path="g"))["mimeType"] == "image/gif"
    assert image_of(await read(tmp_path, path="j"))["mimeType"] == "image/jpeg"


@pytest.mark.slow
async def test_large_image_is_resized_and_noted(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(picture("PNG", (4000, 2000)))
    result = await read(tmp_path, path="big.png")
    image = image_of(result)
    assert text_of(result) == (
        f"Read image file [{image['mimeType']}]\n"  # the type actually sent, which may now be JPEG
        "[Image: original 4000x2000, displayed at 2000x1000. Multiply coordinates by 2.00 to map to original image.]"
    )
    from PIL import Image

    assert Image.open(io.BytesIO(base64.b64decode(image["data"]))).size == (2000, 1000)
    assert result.structured_content["note"] == text_of(result)


async def test_model_limits_and_auto_resize_setting_reach_the_tool(tmp_path: Path) -> None:
    data = picture("PNG", (800, 400))
    (tmp_path / "p.png").write_bytes(data)
    small_box = ImagePolicy(limits=ImageLimits(max_width=400, max_height=400))
    resized = await read(tmp_path, ToolEnv(cwd=tmp_path, image_policy=lambda: small_box), path="p.png")
    assert text_of(resized).endswith("displayed at 400x200. Multiply coordinates by 2.00 to map to original image.]")
    off = ImagePolicy(auto_resize=False, limits=small_box.limits)
    kept = await read(tmp_path, ToolEnv(cwd=tmp_path, image_policy=lambda: off), path="p.png")
    assert kept.content == [{"type": "text", "text": "Read image file [image/png]"},
                            {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"}]


async def test_bmp_is_sent_as_png(tmp_path: Path) -> None:
    (tmp_path / "b.bmp").write_bytes(picture("BMP", (30, 20)))
    result = await read(tmp_path, path="b.bmp")
    assert text_of(result) == "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    assert image_of(result)["mimeType"] == "image/png"


async def test_undecodable_image_gives_only_the_note(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(png_bytes()[:40])  # signature and header, no pixels
    result = await read(tmp_path, path="bad.png")
    assert result.content == [{"type": "text", "text": (
        "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]")}]
    assert result.structured_content == text_of(result)
    assert result.details is None


async def test_huge_single_line_file_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "sparse.bin"
    with open(big, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no newline anywhere
    result = await read(tmp_path, path="sparse.bin")
    assert text_of(result).startswith("[Line 1 is 64.0MB, exceeds 50.0KB limit.")


async def test_limit_zero_and_tail_after_many_lines(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("".join(f"{i}\n" for i in range(1, 100001)))
    text = text_of(await read(tmp_path, path="m.txt", offset=99999))
    assert text == "99999\n100000\n"
    assert text_of(await read(tmp_path, path="m.txt", offset=3, limit=0)) == (
        "\n\n[99999 more lines in file. Use offset=3 to continue.]"
    )


async def test_abort_before_start(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    signal = AbortSignal()
    signal.abort()
    tool = create_builtin_tools(ToolEnv(cwd=tmp_path))["read"]
    with pytest.raises(ToolError, match=r"^Operation aborted$"):
        await tool.execute("t", {"path": "a.txt"}, signal, lambda _: None)
