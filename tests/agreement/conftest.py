"""Fixtures of the agreement tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Bradley-Terry (torch, full-batch Adam on tiny tensors) slows down many times with several threads on a busy
    CPU; the agreement tests run it with one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
