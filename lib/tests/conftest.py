"""Shared fixtures and helpers for the attnbook unit tests."""

from __future__ import annotations

import matplotlib
import pytest
import torch
from hypothesis import HealthCheck, settings

# Render off-screen: the library never uses pyplot, but the plotting tests
# import it to check that no pyplot figure appears.
matplotlib.use("Agg")


def pytest_configure(config):
    # Two tiers (Makefile): `make test` runs the library tests but these
    # (test-lib), `make check` runs them alone (test-slow), so nothing lands
    # without them. Only a test that trains a model for several seconds
    # carries the mark.
    config.addinivalue_line("markers", "slow: trains a model for seconds; run by make check")


# Deterministic, fast property tests that write nothing into the checkout.
settings.register_profile(
    "attnbook",
    deadline=None,
    database=None,
    derandomize=True,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("attnbook")

# The only allowed skip: CUDA variants on a machine without a GPU.
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    ),
]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param
