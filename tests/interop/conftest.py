"""Fixtures of the interop tests: the host tests run on the interpreter (numpy memory is
host memory) even where there is a GPU; the `gpu` tests run on the GPU backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cutile.runtime import driver


@pytest.fixture(autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[None]:
    if "gpu" in request.keywords or driver.backend() == "interpreter":
        yield
        return
    driver.reset_for_tests("interpreter")
    try:
        yield
    finally:
        driver.reset_for_tests(None)
