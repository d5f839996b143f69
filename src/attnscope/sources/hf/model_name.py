"""The name a person knows a model by (``all-MiniLM-L6-v2``), for titles.

``name_or_path`` is a hub name (``sentence-transformers/all-MiniLM-L6-v2``),
a folder in the Hugging Face cache (``.../models--org--name/snapshots/<hash>``)
or any local folder, whose last part is often a generic ``model``; the
model card's first heading then names it. A folder a GGUF file was loaded from
(``from_pretrained(folder, gguf_file=...)``, often a package's folder) is named by
its one ``.gguf`` file, less the quantisation tag.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_CACHE_FOLDER = re.compile(r"^models--(?P<org>[^/]+?)--(?P<name>[^/]+)$")
_HEADING = re.compile(r"^#\s+(?P<title>\S.*?)\s*#*\s*$")
_CARD_PREFIX = "model card for "
_CARD_LINES = 200  # a card names its model near the top; never read a whole long file
_GGUF_QUANT = re.compile(r"[.-](?:i?q\d\w*|bf16|f16|f32)$", re.IGNORECASE)


def model_display_name(model: Any) -> str:
    """A short, recognisable name for ``model``: its hub name, or what its folder says.

    Falls back to the model's class name (``BertModel``) when it has no
    ``name_or_path`` (built from a config).

    Examples
    --------
    >>> class Loaded:
    ...     name_or_path = "sentence-transformers/all-MiniLM-L6-v2"
    >>> model_display_name(Loaded())
    'all-MiniLM-L6-v2'
    >>> model_display_name(object())
    'object'
    """
    name = str(getattr(model, "name_or_path", "") or "")
    return name_from_path(name) if name else type(model).__name__


def name_from_path(name_or_path: str) -> str:
    """The model's name in ``name_or_path``: a hub name's last part, or a folder's name.

    A folder in the Hugging Face cache gives its repository's name; another
    folder gives its model card's first heading, else its one GGUF file's name
    (without the quantisation tag), else its own name.

    Examples
    --------
    >>> name_from_path("bert-base-uncased"), name_from_path("google/flan-t5-small")
    ('bert-base-uncased', 'flan-t5-small')
    >>> name_from_path("/cache/hub/models--google--flan-t5-small/snapshots/0f3c")
    'flan-t5-small'
    """
    path = Path(name_or_path)
    for part in reversed(path.parts):
        found = _CACHE_FOLDER.match(part)
        if found:
            return found["name"]
    if path.is_dir():
        return _card_title(path / "README.md") or _gguf_name(path) or path.resolve().name
    return name_or_path.rstrip("/").rsplit("/", 1)[-1]


def _gguf_name(folder: Path) -> str | None:
    """The name of the one GGUF file in ``folder`` less its quantisation tag, else None.

    Examples
    --------
    >>> [_GGUF_QUANT.sub("", s) for s in ("SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m")]
    ['SmolLM2-135M-Instruct', 'gemma-3-270m']
    """
    if (folder / "config.json").exists():
        return None
    files = sorted(folder.glob("*.gguf"))
    return _GGUF_QUANT.sub("", files[0].stem) if len(files) == 1 else None


def _card_title(card: Path) -> str | None:
    """The first ``# heading`` of a model card, outside its front matter and code."""
    try:
        with card.open(encoding="utf-8") as lines:
            head = [line.rstrip("\n") for _, line in zip(range(_CARD_LINES), lines, strict=False)]
    except (OSError, UnicodeDecodeError):
        return None
    in_front_matter = bool(head) and head[0].strip() == "---"
    in_code = False
    for line in head[1:] if in_front_matter else head:
        if in_front_matter:
            in_front_matter = line.strip() != "---"
            continue
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        found = None if in_code else _HEADING.match(line)
        if found:
            title = found["title"]
            return title[len(_CARD_PREFIX) :] if title.lower().startswith(_CARD_PREFIX) else title
    return None
