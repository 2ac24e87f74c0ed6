"""Fixtures of the study page's in-process tests: the demo project, written once per module and copied per test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-template")


@pytest.fixture
def project(template: Path, tmp_path: Path) -> Path:
    from tests.web.server_walk import demo_copy

    return demo_copy(template, tmp_path)
