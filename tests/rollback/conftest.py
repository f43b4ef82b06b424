"""Fixture `e2e` for the rollback tests: the e2e harness's fresh embedded cluster + Git repo per test."""

from tests.e2e.conftest import e2e

__all__ = ["e2e"]
