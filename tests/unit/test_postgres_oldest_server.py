"""A pool on a PostgreSQL too old for the schema is refused by name before any migration runs
(schema v5's normalize() came with PostgreSQL 13: on 12 it failed half-way, "function normalize(text)
does not exist"). The suite's own servers (16 and 18) pass the same check on every PostgreSQL test."""

from __future__ import annotations

import pytest

from memory.errors import ConfigError
from memory.postgres.migrations import refuse_older_server


@pytest.mark.parametrize(("version_num", "named"), [(120017, "PostgreSQL 12 "), (90624, "PostgreSQL 9.6 ")])
def test_a_server_older_than_13_is_named_and_nothing_changed(version_num, named):
    with pytest.raises(ConfigError) as refused:
        refuse_older_server(version_num, "pool team")
    assert named in str(refused.value) and "13 or later" in str(refused.value) and "nothing was changed" in str(refused.value)


@pytest.mark.parametrize("version_num", [130000, 160014, 180004])
def test_13_and_later_pass(version_num):
    refuse_older_server(version_num, "pool team")
