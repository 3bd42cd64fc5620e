"""Dates far from now are refused, never silently rewritten; the ones kept come back exactly.

Times are stored as epoch seconds; 0001-01-01 read back as 1968-01-12 and
9999-12-31 as 1978-01-11. Through `remember --from`, `import` and the library,
a time outside 1700-2199 is refused by name, and the bounds themselves round
trip to the microsecond.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from arcana_cli import exit_codes
from memory.types import MemoryEntry

FAR = ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", "1699-12-31T23:59:59.999999Z", "2200-01-01T00:00:00Z",
       "0001-01-01T00:30:00+01:00"]
KEPT = ["1700-01-01T00:00:00.000001Z", "2199-12-31T23:59:59.999999Z", "1969-07-20T20:17:40.123456Z"]


def _listed(cli, agent):
    result = cli("memory", "list", "--agent", agent, "--json", "--limit", "100")
    assert result.exit_code == 0, result.stderr
    return {m["content"]: m["created_at"] for m in json.loads(result.stdout)}



def test_remember_from_refuses_far_dates_and_keeps_the_rest_exactly(cli, tmp_path, no_embedder):
    source = tmp_path / "dates.jsonl"
    lines = [{"content": f"said at {when}", "created_at": when} for when in FAR + KEPT]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = cli("remember", "--from", str(source), "--agent", "ada", "--no-reconcile")
    assert result.exit_code == exit_codes.USAGE
    for number in range(1, len(FAR) + 1):
        assert f"line {number}:" in result.stderr and "outside the times" in result.stderr
    stored = _listed(cli, "ada")
    assert stored == {f"said at {when}": when for when in KEPT}


def test_import_refuses_a_far_date(cli, tmp_path, no_embedder):
    assert cli("remember", "an ordinary memory", "--agent", "ada").exit_code == 0
    export = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(export)).exit_code == 0
    head, row = export.read_text().splitlines()
    record = json.loads(row)
    far = {**record, "memory": {**record["memory"], "id": "far", "content": "from year one", "created_at": FAR[0]}}
    kept = {**record, "memory": {**record["memory"], "id": "kept", "content": "from 1700", "created_at": KEPT[0]}}
    export.write_text("\n".join([head, json.dumps(far), json.dumps(kept)]) + "\n")
    result = cli("import", str(export), "--agent", "copy", "--no-embed")
    assert result.exit_code == exit_codes.USAGE
    assert "line 2:" in result.stderr and "outside the times" in result.stderr
    assert _listed(cli, "copy") == {"from 1700": KEPT[0]}


@pytest.mark.parametrize("field", ["created_at", "updated_at", "valid_from", "valid_to", "last_accessed_at"])
def test_the_library_refuses_a_far_date_in_every_time_field(field):
    with pytest.raises(ValidationError, match="outside the times"):
        MemoryEntry(agent_id="a", content="x", **{field: "9999-12-31T00:00:00Z"})
    assert MemoryEntry(agent_id="a", content="x", **{field: KEPT[1]})  # positive control


@pytest.mark.parametrize("option", ["--since", "--as-of"])
@pytest.mark.parametrize("duration", ["99999999999d", "1000000d", "99999999999999999999999h", "9" * 5000 + "d"])
def test_a_duration_reaching_past_the_year_1_is_a_usage_error(cli, no_embedder, option, duration):
    """Such a duration ended in an OverflowError traceback (exit 1); one of over 4,300 digits in a
    ValueError traceback telling the user to call sys.set_int_max_str_digits()."""
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0
    result = cli("recall", "deploys", "--agent", "ada", option, duration)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert isinstance(result.exception, SystemExit) and "past the year 1" in result.stderr
    control = cli("recall", "deploys", "--agent", "ada", option, "7d", "--json")  # a duration in range still works
    assert control.exit_code == 0, control.output


def test_import_refuses_a_time_given_as_a_number(cli, tmp_path, no_embedder):
    """A number was read as epoch seconds, or past 2e10 as milliseconds: 25000000000 (the year 2762 in
    seconds) was stored as 1970-10-17 without a word. Each is a bad line now; the ISO time is the control."""
    assert cli("remember", "an ordinary memory", "--agent", "ada").exit_code == 0
    export = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(export)).exit_code == 0
    head, row = export.read_text().splitlines()
    record = json.loads(row)
    given = [25000000000, 1714564800, 1714564800.5, "1714564800", True, "2024-05-01T12:00:00Z"]
    lines = [head] + [
        json.dumps({**record, "memory": {**record["memory"], "id": f"n{n}", "content": f"said {when!r}", "created_at": when}})
        for n, when in enumerate(given)
    ] + [json.dumps({**record, "memory": {**record["memory"], "id": "v", "content": "valid", "valid_to": 1714564800}})]
    export.write_text("\n".join(lines) + "\n")
    result = cli("import", str(export), "--agent", "copy", "--no-embed")
    assert result.exit_code == exit_codes.USAGE
    for number, shown in zip(range(2, 7), ("25000000000", "1714564800", "1714564800.5", '"1714564800"', "true")):
        assert f"line {number}: invalid created_at: {shown} is not an ISO 8601 time" in result.stderr
    assert "line 8: invalid valid_to: 1714564800 is not" in result.stderr
    assert _listed(cli, "copy") == {"said '2024-05-01T12:00:00Z'": "2024-05-01T12:00:00Z"}
