"""The image normaliser: pass-through, resize, conversion, failure notes,
and prompt images over RPC reaching the provider resized."""

from __future__ import annotations

import base64
import io
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pi_coding_agent.coding.tools.images import (
    BLOCKED_IMAGE_TEXT,
    CONVERT_FAILED,
    RESIZE_FAILED,
    ImageLimits,
    ImagePolicy,
    block_images,
    decode_base64,
    dimension_note,
    normalise_user_content,
    process_image,
)
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import RpcProcess


def gradient(width: int, height: int) -> Image.Image:
    """A smooth RGB picture (compresses well, so only its pixel size matters)."""
    ramp = Image.linear_gradient("L")
    return Image.merge("RGB", (ramp.resize((width, height)), ramp.rotate(90).resize((width, height)),
                               ramp.rotate(45).resize((width, height))))


def noise(width: int, height: int) -> Image.Image:
    """Incompressible pixels, so the byte budget decides."""
    return Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))


def encode(image: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def opened(block: Any) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block["data"])))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --------------------------------------------------------------------------- process_image


def test_small_png_passes_through_byte_for_byte() -> None:
    data = encode(gradient(300, 200), "PNG")
    processed = process_image(data, "image/png")
    assert processed.image == {"type": "image", "data": b64(data), "mimeType": "image/png"}
    assert processed.hints == []


@pytest.mark.slow
def test_large_png_is_scaled_into_the_box_with_the_dimension_note() -> None:
    processed = process_image(encode(gradient(3000, 1500), "PNG"), "image/png")
    assert processed.image is not None
    assert processed.image["mimeType"] in ("image/png", "image/jpeg")
    with opened(processed.image) as image:
        assert image.size == (2000, 1000)
        assert Image.MIME.get(image.format or "") == processed.image["mimeType"]
    assert processed.hints == [
        "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"
    ]


@pytest.mark.slow
def test_tall_image_is_bounded_by_height_and_aspect_kept() -> None:
    processed = process_image(encode(gradient(1000, 4000), "PNG"), "image/png")
    assert processed.image is not None
    with opened(processed.image) as image:
        assert image.size == (500, 2000)


@pytest.mark.slow
def test_exif_orientation_is_applied_before_measuring() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, shown rotated a quarter turn
    data = encode(gradient(3000, 1000), "JPEG", exif=exif)
    processed = process_image(data, "image/jpeg")
    assert processed.image is not None
    with opened(processed.image) as image:
        assert image.size == (667, 2000)
    assert processed.hints[-1].startswith("[Image: original 1000x3000, displayed at 667x2000.")


def test_bmp_is_converted_to_png() -> None:
    processed = process_image(encode(gradient(64, 32), "BMP"), "image/bmp")
    assert processed.image is not None and processed.image["mimeType"] == "image/png"
    with opened(processed.image) as image:
        assert (image.format, image.size) == ("PNG", (64, 32))
    assert processed.hints == ["[Image converted from image/bmp to image/png.]"]


@pytest.mark.slow
def test_large_bmp_gets_both_hints_in_order() -> None:
    processed = process_image(encode(gradient(2400, 1200), "BMP"), "image/bmp")
    assert processed.image is not None
    target = processed.image["mimeType"]
    assert processed.hints == [
        f"[Image converted from image/bmp to {target}.]",
        "[Image: original 2400x1200, displayed at 2000x1000. Multiply coordinates by 1.20 to map to original image.]",
    ]


def test_corrupt_images_are_omitted_with_pis_reasons() -> None:
    truncated = encode(gradient(300, 200), "PNG")[:200]
    assert process_image(truncated, "image/png") == (None, [RESIZE_FAILED])
    assert process_image(b"GIF89a" + b"\0" * 20, "image/gif") == (None, [RESIZE_FAILED])
    # a type that needs converting fails earlier, with the other message
    assert process_image(b"BM" + b"\0" * 40, "image/bmp") == (None, [CONVERT_FAILED])
    assert RESIZE_FAILED == "[Image omitted: could not be resized below the inline image size limit.]"
    assert CONVERT_FAILED == "[Image omitted: could not be converted to a supported inline image format.]"


@pytest.mark.slow
def test_byte_budget_shrinks_until_the_base64_fits() -> None:
    data = encode(noise(800, 600), "PNG")
    limits = ImageLimits(max_bytes=120_000)
    processed = process_image(data, "image/png", ImagePolicy(limits=limits))
    assert processed.image is not None
    assert len(processed.image["data"]) < limits.max_bytes
    with opened(processed.image) as image:
        width, height = image.size
    assert width < 800 and height < 600
    assert processed.hints == [dimension_note((800, 600), (width, height))]


def test_over_budget_small_image_is_re_encoded_at_its_own_size() -> None:
    data = encode(noise(300, 300), "PNG")  # inside the box, over a tiny budget
    processed = process_image(data, "image/png", ImagePolicy(limits=ImageLimits(max_bytes=len(b64(data)) - 1)))
    assert processed.image is not None and processed.image["mimeType"] == "image/jpeg"
    assert processed.hints == [dimension_note((300, 300), (300, 300))]


def test_model_limits_override_the_defaults_field_by_field() -> None:
    model = {"inputLimits": {"images": {"resize": {"maxWidth": 500, "jpegQuality": 60}}}}
    limits = ImageLimits.of_model(model)
    assert limits == ImageLimits(max_width=500, max_height=2000, max_bytes=int(4.5 * 1024 * 1024), jpeg_quality=60)
    assert ImageLimits.of_model({"id": "m"}) == ImageLimits.of_model(None) == ImageLimits()
    processed = process_image(encode(gradient(1000, 400), "PNG"), "image/png", ImagePolicy(limits=limits))
    assert processed.image is not None
    with opened(processed.image) as image:
        assert image.size == (500, 200)


@pytest.mark.slow
def test_auto_resize_off_passes_supported_types_through_undecoded() -> None:
    off = ImagePolicy(auto_resize=False)
    big = encode(gradient(3000, 1500), "PNG")
    assert process_image(big, "image/png", off) == ({"type": "image", "data": b64(big), "mimeType": "image/png"}, [])
    assert process_image(b"not really", "image/jpg", off).image == {
        "type": "image", "data": b64(b"not really"), "mimeType": "image/jpeg"}
    converted = process_image(encode(gradient(64, 32), "BMP"), "image/bmp", off)
    assert converted.image is not None and converted.image["mimeType"] == "image/png"
    assert converted.hints == ["[Image converted from image/bmp to image/png.]"]


def test_dimension_note_rounds_half_up_like_javascript() -> None:
    assert dimension_note((2250, 1000), (2000, 889)) == (
        "[Image: original 2250x1000, displayed at 2000x889. Multiply coordinates by 1.13 to map to original image.]"
    )


def test_base64_is_decoded_as_leniently_as_node() -> None:
    assert decode_base64("aGVsbG8=") == b"hello"
    assert decode_base64("aGVsbG8") == b"hello"
    assert decode_base64("aGVs\nbG8=") == b"hello"
    assert decode_base64(base64.urlsafe_b64encode(b"\xfb\xff").decode()) == b"\xfb\xff"


# --------------------------------------------------------------------------- user content and blocking


@pytest.mark.slow
def test_user_content_gets_images_normalised_and_hints_after_a_blank_line() -> None:
    big = {"type": "image", "data": b64(encode(gradient(4000, 1000), "PNG")), "mimeType": "image/png"}
    broken = {"type": "image", "data": b64(b"\x89PNG\r\n\x1a\n broken"), "mimeType": "image/png"}
    small_png = encode(gradient(10, 10), "PNG")
    small = {"type": "image", "data": b64(small_png), "mimeType": "image/png"}
    content = normalise_user_content([{"type": "text", "text": "look"}, big, broken, small], ImagePolicy())
    assert content[0] == {"type": "text", "text": (
        "look\n\n[Image: original 4000x1000, displayed at 2000x500. Multiply coordinates by 2.00 to map to "
        "original image.]\n" + RESIZE_FAILED)}
    assert [block["type"] for block in content] == ["text", "image", "image"]  # the broken one is dropped
    assert content[2] == small


def test_user_content_without_images_is_returned_as_is() -> None:
    content = [{"type": "text", "text": "plain"}]
    assert normalise_user_content(content, ImagePolicy()) is content


def test_block_images_replaces_images_with_one_placeholder_per_run() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image, image]},
        {"role": "toolResult", "toolCallId": "c", "content": [image, {"type": "text", "text": "x"}, image]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]
    blocked = block_images(messages)
    placeholder = {"type": "text", "text": BLOCKED_IMAGE_TEXT}
    assert blocked[0]["content"] == [{"type": "text", "text": "see"}, placeholder]
    assert blocked[1]["content"] == [placeholder, {"type": "text", "text": "x"}, placeholder]
    assert blocked[2] is messages[2]
    assert messages[0]["content"][1] is image  # the transcript itself is untouched


# --------------------------------------------------------------------------- over RPC


@pytest.fixture
def agent_dir(tmp_path: Path, fake_llm: FakeLLMServer) -> Path:
    """An agent dir whose provider ``fake`` (one vision model) is the fake server."""
    path = tmp_path / "agent"
    path.mkdir()
    (path / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{fake_llm.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "vision", "input": ["text", "image"], "contextWindow": 100000, "maxTokens": 4096}]}}}))
    return path


async def spawn(agent_dir: Path) -> RpcProcess:
    cwd = agent_dir.parent / "work"
    cwd.mkdir(exist_ok=True)
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(agent_dir.parent)}
    return await RpcProcess.pi("--provider", "fake", "--model", "vision", "--no-session", cwd=cwd, env=env)


@pytest.fixture
async def pi(agent_dir: Path) -> AsyncIterator[RpcProcess]:
    proc = await spawn(agent_dir)
    yield proc
    await proc.kill()


def sent_images(request: dict[str, Any]) -> list[tuple[str, Image.Image]]:
    """(mime type, picture) of every image part the provider received in user messages."""
    found: list[tuple[str, Image.Image]] = []
    for message in request["body"]["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            for part in message["content"]:
                if part["type"] == "image_url":
                    header, data = part["image_url"]["url"].split(",", 1)
                    found.append((header[len("data:"):-len(";base64")],
                                  Image.open(io.BytesIO(base64.b64decode(data)))))
    return found


@pytest.mark.slow
async def test_prompt_image_reaches_the_provider_resized(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "seen"}]})
    image = {"type": "image", "data": b64(encode(gradient(3000, 1500), "PNG")), "mimeType": "image/png"}
    await pi.send({"type": "prompt", "message": "what is this?", "images": [image], "id": "p"})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    assert next(r for r in records if r.get("id") == "p")["success"] is True
    user = next(r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "user")
    note = "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"
    assert user["content"][0] == {"type": "text", "text": f"what is this?\n\n{note}"}
    [(mime, sent)] = sent_images(fake_llm.requests[0])
    assert sent.size == (2000, 1000) and mime == user["content"][1]["mimeType"]
    assert fake_llm.requests[0]["body"]["messages"][-1]["content"][0]["text"] == f"what is this?\n\n{note}"


@pytest.mark.slow
async def test_queued_follow_up_image_is_normalised_when_delivered(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "first"}]}, {"content": [{"type": "text", "text": "second"}]})
    bmp = {"type": "image", "data": b64(encode(gradient(40, 20), "BMP")), "mimeType": "image/bmp"}
    queued = await pi.request({"type": "follow_up", "message": "and this", "images": [bmp]})
    assert queued["data"] == {"disposition": "queued"}
    await pi.send({"type": "prompt", "message": "start", "id": "p"})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    users = [r["message"] for r in records if r["type"] == "message_start" and r["message"]["role"] == "user"]
    assert users[1]["content"][0] == {"type": "text", "text": "and this\n\n[Image converted from image/bmp to image/png.]"}
    assert users[1]["content"][1]["mimeType"] == "image/png"
    [(mime, sent)] = sent_images(fake_llm.requests[1])
    assert (mime, sent.format, sent.size) == ("image/png", "PNG", (40, 20))


@pytest.mark.slow
async def test_block_images_setting_keeps_images_from_the_provider(agent_dir: Path, fake_llm: FakeLLMServer) -> None:
    (agent_dir / "settings.json").write_text(json.dumps({"images": {"blockImages": True}}))
    pi = await spawn(agent_dir)
    try:
        image = {"type": "image", "data": b64(encode(gradient(8, 8), "PNG")), "mimeType": "image/png"}
        await pi.send({"type": "prompt", "message": "hidden", "images": [image, image], "id": "p"})
        records = await pi.read_until(lambda r: r["type"] == "agent_settled")
        user = next(r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "user")
        assert [block["type"] for block in user["content"]] == ["text", "image", "image"]  # kept in the session
        sent = fake_llm.requests[0]["body"]["messages"][-1]["content"]
        assert sent == [{"type": "text", "text": "hidden"}, {"type": "text", "text": BLOCKED_IMAGE_TEXT}]
    finally:
        await pi.kill()


@pytest.mark.slow
async def test_read_tool_follows_the_models_resize_limits(agent_dir: Path, fake_llm: FakeLLMServer) -> None:
    models = json.loads((agent_dir / "models.json").read_text())
    models["providers"]["fake"]["models"][0]["inputLimits"] = {"images": {"resize": {"maxWidth": 100}}}
    (agent_dir / "models.json").write_text(json.dumps(models))
    (agent_dir.parent / "work").mkdir()
    gradient(400, 200).save(agent_dir.parent / "work" / "shot.png")
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "shot.png"}}]},
                 {"content": [{"type": "text", "text": "done"}]})
    pi = await spawn(agent_dir)
    try:
        await pi.send({"type": "prompt", "message": "look at shot.png", "id": "p"})
        records = await pi.read_until(lambda r: r["type"] == "agent_settled")
        result = next(r["message"] for r in records if r["type"] == "message_end"
                      and r["message"]["role"] == "toolResult")
        assert result["content"][0]["text"].endswith(
            "\n[Image: original 400x200, displayed at 100x50. Multiply coordinates by 4.00 to map to original image.]")
        [(_, sent)] = sent_images(fake_llm.requests[1])
        assert sent.size == (100, 50)
    finally:
        await pi.kill()
