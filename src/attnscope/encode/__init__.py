"""Turn a trace into what the browser reads: the selection schema, ``_meta`` and binary chunks.

One module per job: :mod:`~attnscope.encode.selection` (fields both sides
share), :mod:`~attnscope.encode.meta`, :mod:`~attnscope.encode.arrays`
(quantised weights, thumbnails, top keys, q/k), :mod:`~attnscope.encode.chunks`
(keys and the chunk each names), :mod:`~attnscope.encode.messages` (replies to
the widget) and :mod:`~attnscope.encode.pack` (the exported page's encoding).
"""
