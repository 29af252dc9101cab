"""Images sent to the model: type sniffing by content, and the normaliser every image goes through.

The normaliser keeps images inside provider limits the way pi does: an image within the pixel box
and the base64 budget passes through byte for byte; a larger one is scaled down (aspect kept) and
re-encoded as PNG or JPEG, whichever fits; BMP becomes PNG. Pillow is imported only when an image
has to be decoded, so start-up never pays for it.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_coding_agent.ai.types import ImageContent, Message, ToolResultMessage, UserContent, UserMessage

if TYPE_CHECKING:
    from PIL.Image import Image

SNIFF_BYTES = 4100
_PNG = b"\x89PNG\r\n\x1a\n"

CONVERT_FAILED = "[Image omitted: could not be converted to a supported inline image format.]"
RESIZE_FAILED = "[Image omitted: could not be resized below the inline image size limit.]"
BLOCKED_IMAGE_TEXT = "Image reading is disabled."
_SUPPORTED = {"image/png": "image/png", "image/jpeg": "image/jpeg", "image/jpg": "image/jpeg",
              "image/gif": "image/gif", "image/webp": "image/webp"}
_FALLBACK_JPEG_QUALITIES = (85, 70, 55, 40)
_SHRINK = 0.75


class ImageLimits(NamedTuple):
    """The box and base64 budget an image must fit (pi's defaults; a model's ``inputLimits`` override)."""

    max_width: int = 2000
    max_height: int = 2000
    max_bytes: int = int(4.5 * 1024 * 1024)
    jpeg_quality: int = 80

    @classmethod
    def of_model(cls, model: Mapping[str, Any] | None) -> ImageLimits:
        """``model.inputLimits.images.resize`` over the defaults, field by field."""
        resize = ((((model or {}).get("inputLimits") or {}).get("images") or {}).get("resize")) or {}
        defaults = cls()

        def pick(key: str, default: int) -> int:
            value = resize.get(key)
            return default if value is None else value

        return cls(
            max_width=pick("maxWidth", defaults.max_width),
            max_height=pick("maxHeight", defaults.max_height),
            max_bytes=pick("maxBytes", defaults.max_bytes),
            jpeg_quality=pick("jpegQuality", defaults.jpeg_quality),
        )


class ImagePolicy(NamedTuple):
    """How the session treats images: resize at all (setting ``images.autoResize``) and within what."""

    auto_resize: bool = True
    limits: ImageLimits = ImageLimits()


class ProcessedImage(NamedTuple):
    """The block to send (None when the image is omitted) and the hint lines for the model."""

    image: ImageContent | None
    hints: list[str]


def process_image(data: bytes, mime_type: str, policy: ImagePolicy | None = None) -> ProcessedImage:
    """Make ``data`` sendable: pass it through, convert it, shrink it, or omit it with a reason."""
    policy = policy or ImagePolicy()
    base = mime_type.split(";")[0].strip().lower()
    supported = _SUPPORTED.get(base)
    decoded: Image | None = None
    if supported is None:
        try:
            decoded = _decode(data)
            data, supported = _encode(decoded, "image/png"), "image/png"
        except Exception:
            return ProcessedImage(None, [CONVERT_FAILED])
    if not policy.auto_resize:
        return ProcessedImage(_block(data, supported), _conversion_hints(base, supported))
    try:
        image, resized = _fit(data, supported, decoded, policy.limits)
    except Exception:
        image, resized = None, None
    if image is None:
        return ProcessedImage(None, [RESIZE_FAILED])
    hints = _conversion_hints(base, image["mimeType"])
    if resized is not None:
        hints.append(dimension_note(*resized))
    return ProcessedImage(image, hints)


def dimension_note(original: tuple[int, int], shown: tuple[int, int]) -> str:
    """Tell the model how the picture it sees maps back to the original's pixel coordinates."""
    from decimal import ROUND_HALF_UP, Decimal

    scale = Decimal(original[0] / shown[0]).quantize(Decimal("0.01"), ROUND_HALF_UP)  # JS toFixed(2)
    return (f"[Image: original {original[0]}x{original[1]}, displayed at {shown[0]}x{shown[1]}. "
            f"Multiply coordinates by {scale} to map to original image.]")


def _conversion_hints(source: str, target: str) -> list[str]:
    return [] if source == target or source in _SUPPORTED else [f"[Image converted from {source} to {target}.]"]


def _block(data: bytes, mime_type: str) -> ImageContent:
    import base64  # with binascii and zlib, loaded by the first image rather than at start-up

    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def _fit(
    data: bytes, mime_type: str, decoded: Image | None, limits: ImageLimits
) -> tuple[ImageContent | None, tuple[tuple[int, int], tuple[int, int]] | None]:
    """The image within ``limits`` and, when it had to be scaled, (original size, new size)."""
    image = decoded if decoded is not None else _decode(data)
    width, height = image.size
    if width <= limits.max_width and height <= limits.max_height and _base64_size(len(data)) < limits.max_bytes:
        return _block(data, mime_type), None
    image = _workable(image)
    for size in _target_sizes(width, height, limits):
        encoded = _first_within(image.resize(size, _lanczos()), limits)
        if encoded is not None:
            return _block(*encoded), ((width, height), size)
    return None, None


def _target_sizes(width: int, height: int, limits: ImageLimits) -> Iterator[tuple[int, int]]:
    """The box-fitted size, then 3/4 of it again and again down to 1x1."""
    if width > limits.max_width:
        width, height = limits.max_width, _js_round(height * limits.max_width / width)
    if height > limits.max_height:
        width, height = _js_round(width * limits.max_height / height), limits.max_height
    while True:
        yield width, height
        smaller = (max(1, math.floor(width * _SHRINK)), max(1, math.floor(height * _SHRINK)))
        if smaller == (width, height):
            return
        width, height = smaller


def _first_within(image: Image, limits: ImageLimits) -> tuple[bytes, str] | None:
    """PNG or JPEG at the configured quality, smaller first; then lower JPEG qualities (encoded only if needed)."""
    first, *lower = dict.fromkeys((limits.jpeg_quality, *_FALLBACK_JPEG_QUALITIES))
    png = (_encode(image, "image/png"), "image/png")
    jpeg = (_encode(image, "image/jpeg", first), "image/jpeg")
    preferred = (jpeg, png) if len(jpeg[0]) < len(png[0]) else (png, jpeg)
    candidates = itertools.chain(preferred, ((_encode(image, "image/jpeg", q), "image/jpeg") for q in lower))
    return next((c for c in candidates if _base64_size(len(c[0])) < limits.max_bytes), None)


def _base64_size(length: int) -> int:
    return math.ceil(length / 3) * 4


def _js_round(value: float) -> int:
    return math.floor(value + 0.5)


def _decode(data: bytes) -> Image:
    """Fully decode (a truncated file fails here, not later), upright per its EXIF orientation."""
    from PIL import Image, ImageOps

    image = Image.open(io.BytesIO(data))
    image.load()
    return ImageOps.exif_transpose(image)


def _workable(image: Image) -> Image:
    """A mode Lanczos resampling and both encoders handle (palette and 16-bit images are widened)."""
    if image.mode in ("RGB", "RGBA", "L", "LA"):
        return image
    has_alpha = "A" in image.getbands() or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")


def _encode(image: Image, mime_type: str, quality: int = 0) -> bytes:
    out = io.BytesIO()
    if mime_type == "image/png":
        image.save(out, "PNG")
    else:
        (image if image.mode in ("RGB", "L") else image.convert("RGB")).save(out, "JPEG", quality=quality)
    return out.getvalue()


def _lanczos() -> Any:
    from PIL import Image

    return Image.Resampling.LANCZOS


def decode_base64(data: str) -> bytes:
    """Decode as leniently as Node's ``Buffer.from(s, "base64")``: url-safe letters, no padding, junk skipped."""
    import base64

    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        pass
    cleaned = re.sub(r"[^A-Za-z0-9+/]", "", data.replace("-", "+").replace("_", "/"))
    cleaned = cleaned[: len(cleaned) - (len(cleaned) % 4 == 1)]
    return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4))


def normalise_user_content(content: list[UserContent], policy: ImagePolicy) -> list[UserContent]:
    """A user message's content with its images processed and their hints appended to the leading text.

    Blocking (decodes images): run it in a thread. Content without images is returned as is.
    """
    first = content[0] if content else None
    if first is None or first["type"] != "text" or not any(b["type"] == "image" for b in content):
        return content
    images: list[UserContent] = []
    hints: list[str] = []
    others: list[UserContent] = []
    for block in content[1:]:
        if block["type"] != "image":
            others.append(block)
            continue
        processed = process_image(decode_base64(block["data"]), block["mimeType"], policy)
        if processed.image is not None:
            images.append(processed.image)
        hints.extend(processed.hints)
    text = first["text"] + ("\n\n" + "\n".join(hints) if hints else "")
    return [{"type": "text", "text": text}, *others, *images]


def block_images(messages: list[Message]) -> list[Message]:
    """With ``images.blockImages``: user and tool-result images become one placeholder text per run."""
    return [_without_images(m) if m["role"] == "user" or m["role"] == "toolResult" else m for m in messages]


def _without_images(message: UserMessage | ToolResultMessage) -> UserMessage | ToolResultMessage:
    content = message["content"]
    if not isinstance(content, list) or not any(block["type"] == "image" for block in content):
        return message
    replaced: list[UserContent] = []
    for block in content:
        if block["type"] == "image":
            block = {"type": "text", "text": BLOCKED_IMAGE_TEXT}
        if block.get("text") == BLOCKED_IMAGE_TEXT and replaced and replaced[-1].get("text") == BLOCKED_IMAGE_TEXT:
            continue
        replaced.append(block)
    blocked = message.copy()  # ``content`` keeps its place among the keys
    blocked["content"] = replaced
    return blocked


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
    import struct  # with its extension module, loaded by the first image file rather than at start-up

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
    import struct

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
