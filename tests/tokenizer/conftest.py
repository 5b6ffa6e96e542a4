"""Fixtures of the single-node library's tests."""

from __future__ import annotations

import pytest

from tests.tokenizer.sample_models import sample_tokenizers


@pytest.fixture(scope="session")
def tokenizers():
    """A small model of each kind, trained once per test run (:func:`sample_models.sample_tokenizers`)."""
    return sample_tokenizers()
