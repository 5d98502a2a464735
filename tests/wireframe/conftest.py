"""Fixtures of the wireframe tests."""

from __future__ import annotations

import numpy as np
import pytest

from ._helpers import cube_wireframe


@pytest.fixture
def cube() -> tuple[np.ndarray, np.ndarray]:
    return cube_wireframe()
