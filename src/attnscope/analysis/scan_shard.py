"""Many inputs over ``torch.distributed`` ranks: balanced shares, one bar, one gathered result.

When ``torch.distributed`` is initialised (``torchrun``, ``accelerate launch``,
or ``init_process_group`` by hand), :func:`run_inputs` gives each rank a share
of the inputs balanced by their token counts, runs its share in lockstep with
the other ranks (one small collective per step, so a rank that raises stops
every rank within one input, and rank 0's progress bar counts every rank's
inputs), and gathers every rank's results with ``all_gather_object``: every
rank returns the same list, in input order, as one process would. With no
process group it is a plain loop.

torch is imported only when a process group may exist, so the module costs
nothing to import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from attnscope._progress import progress
from attnscope.errors import AttnscopeError, ScanRankError

if TYPE_CHECKING:
    from attnscope.sources.session import ModelSession

R = TypeVar("R")
T = TypeVar("T")


class Store(Protocol[R]):
    """Where each input's result is kept as soon as it is computed (see ``scan_store``)."""

    def write(self, index: int, result: R) -> None:
        """Keep ``result`` of input ``index``, atomically."""

    def read(self, index: int) -> R:
        """The kept result of input ``index``."""


@dataclass(frozen=True)
class Ran(Generic[R]):
    """What :func:`run_inputs` did: every input's result, the ranks, the inputs resumed."""

    results: list[R]
    world_size: int
    resumed: int


def world() -> tuple[int, int]:
    """``(rank, world_size)`` of the ``torch.distributed`` process group; ``(0, 1)`` without one.

    Examples
    --------
    >>> world()  # no process group in this process
    (0, 1)
    """
    distributed = sys.modules.get("torch.distributed")
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return 0, 1
    return int(distributed.get_rank()), int(distributed.get_world_size())


def on_rank_zero(job: Callable[[], T]) -> T:
    """``job()`` on rank 0 only; every rank gets its value, or raises the error it raised.

    What must happen once (checking and creating a scan's folder) happens on
    rank 0 while the others wait; an :class:`~attnscope.errors.AttnscopeError`
    there is raised on every rank with the same type and message (any other
    error as a :class:`~attnscope.errors.ScanRankError` on the other ranks).

    Examples
    --------
    >>> on_rank_zero(lambda: 42)
    42
    """
    rank, size = world()
    if size == 1:
        return job()
    import torch.distributed as dist

    box: list[Any] = [None]
    if rank == 0:
        try:
            box[0] = ("value", job())
        except Exception as err:  # the other ranks wait for word: never leave them hanging
            kind, message = type(err), str(err)
            if not isinstance(err, AttnscopeError):
                kind = ScanRankError
                message = f"rank 0 could not prepare the scan: {type(err).__name__}: {err}"
            dist.broadcast_object_list([("error", kind, message)], src=0)
            raise
    dist.broadcast_object_list(box, src=0)
    if box[0][0] == "error":
        raise box[0][1](box[0][2])
    value: T = box[0][1]
    return value


def balance(weights: Sequence[float], ranks: int) -> list[list[int]]:
    """Split input indices into ``ranks`` shares of about equal total weight (tokens).

    Heaviest first, each to the lightest share so far (ties: the lower rank);
    each share is in input order.

    Examples
    --------
    >>> balance([10, 1, 1, 8, 2], 2)
    [[0, 1], [2, 3, 4]]
    >>> balance([5, 5, 5], 1)
    [[0, 1, 2]]
    """
    shares: list[list[int]] = [[] for _ in range(ranks)]
    loads = [0.0] * ranks
    for index in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        lightest = min(range(ranks), key=lambda r: (loads[r], r))
        shares[lightest].append(index)
        loads[lightest] += float(weights[index])
    return [sorted(share) for share in shares]


def token_weights(
    session: ModelSession | None,
    inputs: Sequence[Any],
    kinds: Sequence[str],
    options: dict[str, Any],
) -> list[float]:
    """Each input's token count for :func:`balance` (a guess from its size where not told).

    Examples
    --------
    >>> token_weights(None, ["a b c", "abcdefgh"], ["text", "text"], {})
    [5.0, 8.0]
    """
    found: list[float] = []
    new = float(options.get("max_new_tokens") or 0)
    for index, (item, kind) in enumerate(zip(inputs, kinds, strict=True)):
        length: int | None = None
        if kind == "trace":
            length = len(item.tokens)
        elif kind in ("text", "chat", "ids") and session is not None:
            length = session.input_length(
                item,
                kind,
                text_pair=options.get("text_pair"),
                max_tokens=options.get("max_tokens"),
                what=f"inputs[{index}]",
            )
        if length is None:  # an image, or text with no tokenizer yet: its size
            length = int(item.numel()) if hasattr(item, "numel") else len(str(item))
        found.append(float(length) + new)
    return found


def run_inputs(
    count: int,
    work: Callable[[int], R],
    *,
    weights: Callable[[], Sequence[float]],
    description: str,
    unit: str,
    store: Store[R] | None = None,
    done: Sequence[int] = (),
) -> Ran[R]:
    """``work(i)`` for every input ``i`` not in ``done``, shared among the ranks; all results.

    ``weights`` is called only when there is more than one rank. Each result
    is given to ``store`` as soon as it is computed; the inputs in ``done``
    are read back from it (on rank 0) instead of computed. One process: an
    input's error propagates as it is. Several ranks: it stops every rank at
    its next step and each raises :class:`~attnscope.errors.ScanRankError`
    naming the rank and the input (results already stored stay).

    Examples
    --------
    >>> ran = run_inputs(3, lambda i: i * i, weights=lambda: [1, 1, 1],
    ...                  description="demo", unit="input")
    >>> ran.results, ran.world_size, ran.resumed
    ([0, 1, 4], 1, 0)
    """
    rank, size = world()
    skipped = set(done)
    pending = [i for i in range(count) if i not in skipped]
    if size > 1:
        every = list(weights())
        shares = balance([every[i] for i in pending], size)
        mine = [pending[i] for i in shares[rank]]
        steps = max(len(share) for share in shares)
    else:
        mine, steps = pending, len(pending)
    results: dict[int, R] = {}
    if rank == 0 and store is not None:
        results |= {index: store.read(index) for index in sorted(skipped)}
    bar = progress(len(pending), description, unit=unit) if rank == 0 else None
    try:
        for step in range(steps):
            failed: tuple[int, BaseException] | None = None
            if step < len(mine):
                index = mine[step]
                if size == 1:
                    results[index] = _kept(work(index), index, store)
                else:
                    try:
                        results[index] = _kept(work(index), index, store)
                    except Exception as err:  # every rank must hear of it, then stop
                        failed = (index, err)
            finished = step < len(mine) and failed is None
            finished_all = _step_together(failed, finished, rank) if size > 1 else 1
            if bar is not None:
                bar.update(finished_all)
    finally:
        if bar is not None:
            bar.close()
    if size > 1:
        results = _gather(results, count)
    return Ran([results[i] for i in range(count)], size, len(skipped))


def _kept(result: R, index: int, store: Store[R] | None) -> R:
    if store is not None:
        store.write(index, result)
    return result


def _step_together(failed: tuple[int, BaseException] | None, finished: bool, rank: int) -> int:
    """One step's collective: how many ranks finished an input; every rank raises if one failed."""
    import torch
    import torch.distributed as dist

    device = (
        torch.device("cuda", torch.cuda.current_device())
        if dist.get_backend() == "nccl"
        else torch.device("cpu")
    )
    counts = torch.tensor([int(failed is not None), int(finished)], device=device)
    dist.all_reduce(counts)
    if int(counts[0]) == 0:
        return int(counts[1])
    raise _failure(failed, rank)


def _failure(failed: tuple[int, BaseException] | None, rank: int) -> ScanRankError:
    """The one error every rank raises when a rank's input failed (the rank and input named)."""
    import torch.distributed as dist

    own = None if failed is None else (rank, failed[0], type(failed[1]).__name__, str(failed[1]))
    report: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(report, own)
    failures = [entry for entry in report if entry is not None]
    first = failures[0]
    message = (
        f"the scan stopped on every rank: inputs[{first[1]}] failed on rank {first[0]} with "
        f"{first[2]}: {first[3]}"
    )
    if len(failures) > 1:
        message += "; also " + ", ".join(f"inputs[{f[1]}] on rank {f[0]}" for f in failures[1:])
    message += (
        ". Inputs finished before it were kept when out= was given (rerun to resume); fix or "
        "drop that input and run the scan again."
    )
    error = ScanRankError(message)
    if failed is not None:
        error.__cause__ = failed[1]
    return error


def _gather(results: dict[int, R], count: int) -> dict[int, R]:
    import torch.distributed as dist

    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, results)
    merged: dict[int, R] = {}
    for part in parts:
        merged |= part
    missing = [i for i in range(count) if i not in merged]
    if missing:  # a rank that saw another folder (out= not shared) cannot fill a gap
        raise ScanRankError(
            f"after gathering every rank's results inputs {missing[:5]} are missing; every rank "
            "must run the same scan (same inputs, same out= on a file system all ranks see)."
        )
    return merged
