"""Whether the Hugging Face Hub answers, asked once with a short limit before a download.

Online but cut off (DNS that fails slowly, a proxy or firewall that swallows the
connection), transformers waits its own timeouts and retries before it fails. A
name that is neither a folder nor in the cache can only load from the hub: one
small request tells within seconds whether the hub is there at all.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from urllib.parse import quote

# Long enough for a slow but working link (one small HEAD), short enough not to feel like a hang.
HUB_PROBE_SECONDS = 3.0


def hub_endpoint() -> str:
    """The hub address downloads use (``HF_ENDPOINT``, read by huggingface_hub at import).

    Examples
    --------
    >>> hub_endpoint().startswith("http")
    True
    """
    from huggingface_hub import constants

    return str(constants.ENDPOINT).rstrip("/")


def hub_unreachable(
    name: str, endpoint: str | None = None, *, seconds: float = HUB_PROBE_SECONDS
) -> str | None:
    """Why the hub at ``endpoint`` gave no answer about ``name`` within ``seconds``; None if it did.

    Any HTTP answer counts, a 404 or 401 included (then transformers explains
    it at once); a refused connection, a name that does not resolve, an
    unreadable answer or silence past ``seconds`` do not. The request runs in a
    daemon thread so that a name lookup that hangs is cut off too.

    Examples
    --------
    >>> hub_unreachable("bert-base-uncased", "http://127.0.0.1:9", seconds=1)  # doctest: +ELLIPSIS
    'no connection: ...'
    """
    url = f"{endpoint or hub_endpoint()}/api/models/{quote(name, safe='/')}"
    outcome: list[str | None] = []

    def ask() -> None:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, method="HEAD"), timeout=seconds
            ):
                outcome.append(None)
        except urllib.error.HTTPError:
            outcome.append(None)  # the hub answered (the name may not exist: transformers says so)
        except urllib.error.URLError as err:
            outcome.append(f"no connection: {err.reason}")
        except TimeoutError:
            outcome.append(f"no answer within {seconds:g} s")
        except OSError as err:
            outcome.append(f"no answer: {type(err).__name__}: {err}")

    worker = threading.Thread(target=ask, name="attnscope-hub-probe", daemon=True)
    worker.start()
    worker.join(seconds + 0.5)
    return outcome[0] if outcome else f"no answer within {seconds:g} s"


def unreachable_message(name: str, endpoint: str, reason: str, cache: str) -> str:
    """Attnscope's error for a name that must download while the hub does not answer.

    Examples
    --------
    >>> print(unreachable_message("org/m", "http://hub", "no answer within 3 s", "/c"))
    ... # doctest: +ELLIPSIS
    attnscope could not reach the Hugging Face Hub (http://hub: no answer within 3 s) to ...
    """
    return (
        f"attnscope could not reach the Hugging Face Hub ({endpoint}: {reason}) to download "
        f"{name!r}, which is not in the Hugging Face cache ({cache}) nor a local folder. Fix: "
        f"download it once where the hub is reachable (hf download {name}), pass a local "
        "folder that holds config.json or a model you loaded yourself, or set "
        "HF_HUB_OFFLINE=1 to use only what is on this machine without trying the network. "
        "A proxy is read from HTTPS_PROXY; another hub address from HF_ENDPOINT."
    )
