"""Every model type transformers offers, tiny and random: exact, attention-only with a reason,
or a clear refusal; never wrong numbers, never a crash, and the model always left as found.

The types come from transformers' Auto mappings when the tests are collected
(:mod:`zoo_models`); all of them run once, in two worker processes
(:mod:`zoo_run`), and each type is then one test. Types the tier cannot build
tiny pass, and are listed with their reason at the end of the run.
"""

from __future__ import annotations

import resource
from typing import Any

import pytest

from zoo_keys import ZOO, ZOO_SECONDS
from zoo_models import model_types
from zoo_readme import SUPPORTED_TYPES_PAGE, render, section
from zoo_run import run_pool

TYPES = model_types()
PASSING = ("exact", "attention-only", "refused", "not built")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def zoo(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """Every type's result, from one pooled run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    results = {item["type"]: item for item in run_pool(TYPES)}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    request.config.stash[ZOO] = results
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    request.config.stash[ZOO_SECONDS] = cpu
    return results


@pytest.mark.parametrize("model_type", TYPES)
def test_model_type(model_type: str, zoo: dict[str, dict[str, Any]]) -> None:
    result = zoo[model_type]
    assert result["outcome"] in PASSING, f"{result['outcome']}: {result['detail']}"
    if result["outcome"] == "refused":
        assert type_named(result), result["detail"]


def type_named(result: dict[str, Any]) -> bool:
    """A refusal names the model (its class) or what it was given, so the user knows what."""
    detail = str(result["detail"])
    return len(detail) > 40 and (
        result.get("class", "") in detail or "token" in detail or "text" in detail
    )


def test_readme_table_is_this_run(zoo: dict[str, dict[str, Any]]) -> None:
    text = SUPPORTED_TYPES_PAGE.read_text(encoding="utf-8")
    assert section(text) == render(zoo.values()), (
        "docs/guide/supported-models.md differs from this run: "
        "`python tests/zoo_readme.py` rewrites it"
    )
