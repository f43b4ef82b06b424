"""Fixture `e2e` for the safety tests (the e2e harness world)."""

from tests.e2e.conftest import e2e

__all__ = ["e2e"]
