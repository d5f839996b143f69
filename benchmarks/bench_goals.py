"""The goals of issues 13 and 17, each printed as met or missed by a stated amount."""

from __future__ import annotations

from dataclasses import dataclass


def number(x: float) -> str:
    """A measurement to a sensible precision: 6154, 61.5, 6.15, 0.615."""
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


@dataclass
class Goal:
    """One goal: ``value`` against ``limit`` (at most, or at least with ``at_least``)."""

    text: str
    value: float | None
    limit: float
    unit: str = ""
    at_least: bool = False
    detail: str = ""  # what was measured, or why nothing was
    boolean: bool = False  # value 1.0 holds, 0.0 does not

    def line(self) -> str:
        if self.value is None:
            return f"- {self.text}: not measured ({self.detail or 'no result'})"
        if self.boolean:
            return f"- {self.text}: **{'met' if self.value else 'missed'}** ({self.detail})"
        value = f"{number(self.value)}{self.unit}"
        goal = f"{'≥' if self.at_least else '≤'} {number(self.limit)}{self.unit}"
        met = self.value >= self.limit if self.at_least else self.value <= self.limit
        detail = f"; {self.detail}" if self.detail else ""
        if met:
            return f"- {self.text}: **met**: {value} against {goal}{detail}"
        by = f"{number(abs(self.value - self.limit))}{self.unit}"
        if self.at_least:
            return f"- {self.text}: **missed**: {value} against {goal}, short by {by}{detail}"
        times = f", {self.value / self.limit:.1f}× the goal" if self.limit else ""
        return f"- {self.text}: **missed**: {value} against {goal}, over by {by}{times}{detail}"


def done(text: str, ok: bool | None, detail: str) -> Goal:
    """A goal that holds or not (a view that opens, cells that draw)."""
    value = None if ok is None else float(ok)
    return Goal(text, value, 1.0, at_least=True, detail=detail, boolean=True)


class Goals:
    def __init__(self) -> None:
        self.goals: list[Goal] = []

    def add(self, goal: Goal) -> None:
        self.goals.append(goal)

    def markdown(self) -> str:
        return "\n".join(["Goals:", "", *(g.line() for g in self.goals), ""])
