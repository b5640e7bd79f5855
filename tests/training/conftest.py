"""Fixtures of the training tests."""

import pytest
from tiny_setup import canine_data


@pytest.fixture(scope="module")
def data():
    """``tiny_setup.canine_data`` once per module."""
    return canine_data()
