"""An ACP prompt (ContentBlock[]) as Claude reads it: text, images, mentioned files and an editor's embedded context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from ipc.errors import InvalidParams

# What the Messages API accepts as an image.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(slots=True)
class PromptContent:
    """`text`: what the prompt says (hooks' `prompt`, the history, the title); `blocks`: Claude's content blocks,
    or None when the prompt is text alone (then `text` is sent as it is)."""

    text: str
    blocks: list[dict[str, Any]] | None


def _refused(index: int, why: str) -> InvalidParams:
    return InvalidParams(f"prompt[{index}]: {why}",
                         data={"errors": [{"loc": ["prompt", index], "msg": why, "type": "unsupported_content"}]})


def mention(uri: str, name: str | None = None) -> str:
    """How a mentioned file appears in the prompt: a Markdown link the model can follow with Read."""
    parsed = urlparse(uri)
    label = unquote(parsed.path) if parsed.scheme == "file" else uri
    return f"[@{name or label}]({uri})"


def prompt_content(blocks: list[dict[str, Any]]) -> PromptContent:
    """Convert ACP blocks (already validated against the wire models, camelCase) into Claude's; refuse what Claude cannot read."""
    text_parts: list[str] = []
    claude: list[dict[str, Any]] = []
    has_image = False
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            text_parts.append(block["text"])
            claude.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            mime = block.get("mimeType")
            if mime not in IMAGE_TYPES:
                raise _refused(index, f"image type {mime!r} is not one Claude reads ({', '.join(sorted(IMAGE_TYPES))})")
            has_image = True
            claude.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": block["data"]}})
        elif kind == "audio":
            raise _refused(index, "audio is not supported (promptCapabilities.audio is false)")
        elif kind == "resource_link":
            link = mention(block["uri"], block.get("name"))
            text_parts.append(link)
            claude.append({"type": "text", "text": link})
        elif kind == "resource":
            resource = block["resource"]
            if "text" in resource:
                embedded = f'<context ref="{resource["uri"]}">\n{resource["text"]}\n</context>'
                text_parts.append(embedded)
                claude.append({"type": "text", "text": embedded})
            elif resource.get("mimeType") in IMAGE_TYPES:
                has_image = True
                claude.append({"type": "image",
                               "source": {"type": "base64", "media_type": resource["mimeType"], "data": resource["blob"]}})
            else:
                raise _refused(index, f"embedded binary resource of type {resource.get('mimeType')!r} cannot be read "
                                      "by Claude (send text, an image, or a resource_link)")
        else:  # the wire model admits no other type; kept for a caller that skipped validation
            raise _refused(index, f"unknown content type {kind!r}")
    text = "\n".join(text_parts)
    return PromptContent(text=text, blocks=claude if has_image else None)
