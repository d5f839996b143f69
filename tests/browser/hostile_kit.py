"""What the hostile-text browser tests share: a recorder injected before the page loads, and
probes of the views' labels.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_tokens import PWNED

# Records every canvas text (window.__drawnText); a dialog marks an injected script.
RECORDER = f"""(() => {{
    window.__drawnText = [];
    const fill = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {{
        window.__drawnText.push(String(text));
        return fill.call(this, text, ...rest);
    }};
    for (const name of ["alert", "confirm", "prompt", "print"]) {{
        window[name] = () => {{ window.{PWNED} = name; }};
    }}
}})()"""

# Elements that only a label parsed as markup could have made inside the widget.
FOREIGN = "img, iframe, script, style, svg, b, textarea, title, object, embed, a[href]"

# The visible token rows of a head-view column: index, text, tooltip, and whether the label
# sits in an isolating <bdi>.
ROWS = """(col) => [...col.querySelectorAll("[data-i]:not([hidden])")].map((d) => ({
    i: Number(d.dataset.i),
    text: d.textContent,
    title: d.title,
    bdi: d.children.length === 1 && d.children[0].tagName === "BDI",
    isolated: d.children.length === 1 && getComputedStyle(d.children[0]).unicodeBidi === "isolate",
}))"""

# Where each character after the neuron info line's label lands, by line.
READING_ORDER = """(info) => {
    // x of each character after the label's <bdi> (up to the next " · "), by line.
    const bdi = info.querySelector("bdi");
    const lines = {};
    let node = bdi.nextSibling, text = "";
    while (node && !text.includes(" · ")) {
        if (node.nodeType === Node.TEXT_NODE) {
            for (let k = 0; k < node.length && !text.includes(" · "); k++) {
                const range = document.createRange();
                range.setStart(node, k);
                range.setEnd(node, k + 1);
                const r = range.getBoundingClientRect();
                text += node.data[k];
                if (r.width > 0) (lines[Math.round(r.top)] ??= []).push(r.left);
            }
        }
        node = node.nextSibling;
    }
    return { label: bdi.textContent, text, lines: Object.values(lines) };
}"""
