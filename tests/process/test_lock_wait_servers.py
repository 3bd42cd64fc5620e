"""A long-lived server applies the lock wait it was started with to the stores its requests open: the
context variable is set once per command, and a request runs in a task or thread uvicorn or anyio
started. Each server is a real process; another process holds the agent's store; the request fails in
about the lock wait (the default is 30 s) saying --lock-wait, nothing changed; released, the same
request goes through (the control)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from urllib.parse import urlencode, urlsplit

from federation_faults import locked_by_another_process
from mcp_client import call, http_session, seed, session
from runner import arcana, keyword_only

QUICK = 10  # seconds: well under the 30 s a store waits by default


async def _ada(home) -> tuple[str, str, str]:
    """ada (keyword only) with a memory to forget and a control; (her id, its id, the control's id)."""
    keyword_only(home)
    ada, ids = await seed(home, "ada", [{"content": "kettle is blue", "confidence_source": "agent"},  # its own to forget
                                        {"content": "tea at four"}])
    return ada, ids["kettle"], ids["tea"]


def _live(home) -> list[str]:
    return sorted(m["content"] for m in json.loads(arcana("memory", "list", "-a", "ada", "--json", home=home)))


async def _forget_held_then_free(client, home, ada: str, kettle: str) -> None:
    with locked_by_another_process(home.agent_db(ada)):
        started = time.monotonic()
        error, text = await call(client, "forget", id=kettle)
        took = time.monotonic() - started
        assert error and "locked by another writer" in text and "--lock-wait" in text and "\n" not in text, text
        assert took < QUICK, took
    assert _live(home) == ["kettle is blue", "tea at four"]  # nothing changed
    error, answer = await call(client, "forget", id=kettle)
    assert not error and answer["archived"], answer
    assert _live(home) == ["tea at four"]  # the control stays


async def test_an_mcp_server_over_stdio_applies_its_lock_wait_to_each_request(arcana_home):
    ada, kettle, _ = await _ada(arcana_home)
    async with session("--agent", "ada", env={"ARCANA_LOCK_WAIT": "0.5"}) as client:
        await _forget_held_then_free(client, arcana_home, ada, kettle)


async def test_an_mcp_server_over_http_applies_its_lock_wait_to_each_request(arcana_home, tmp_path):
    ada, kettle, _ = await _ada(arcana_home)
    with (tmp_path / "http-stderr.txt").open("w+") as errlog:
        async with http_session(arcana_home, "--agent", "ada", stderr=errlog, before=("--lock-wait", "0.5")) as client:
            await _forget_held_then_free(client, arcana_home, ada, kettle)


class _Ui:
    """`arcana --lock-wait 0.5 ui` as a real process, spoken to with its token's cookie."""

    def __init__(self, home, errors):
        with errors.open("w") as sink:
            self.proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "--lock-wait", "0.5", "ui",
                                          "--bind", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=sink,
                                         env={**os.environ, "ARCANA_HOME": str(home.root)})
        for _ in range(600):
            found = re.search(r"http://127\.0\.0\.1:\d+/\S*\?token=\S+", errors.read_text())
            if found:
                break
            assert self.proc.poll() is None, errors.read_text()
            time.sleep(0.05)
        parts = urlsplit(found.group(0))
        self.port, self.root = parts.port, parts.path.rstrip("/")
        self.cookie = f"arcana_ui_{self.port}={parts.query.removeprefix('token=')}"

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, str]:
        headers = {"Host": f"127.0.0.1:{self.port}", "Cookie": self.cookie}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, self.root + path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read().decode("utf-8")
        finally:
            conn.close()


async def test_the_web_view_applies_its_lock_wait_to_each_request(arcana_home, tmp_path):
    ada, kettle, _ = await _ada(arcana_home)
    ui = _Ui(arcana_home, tmp_path / "ui-stderr.txt")
    try:
        status, page = ui.request("GET", f"/memory/{kettle}?agent=ada")
        assert status == 200, page
        form = {"agent": "ada", "action": "forget", "seq": re.search(r"action=forget&amp;seq=(\d+)", page).group(1)}
        with locked_by_another_process(arcana_home.agent_db(ada)):
            started = time.monotonic()
            status, page = ui.request("POST", f"/memory/{kettle}/act", form)
            took = time.monotonic() - started
            assert status >= 500 and "locked by another writer" in page and "--lock-wait" in page, (status, page)
            assert took < QUICK, took
        assert _live(arcana_home) == ["kettle is blue", "tea at four"]  # nothing changed
        status, page = ui.request("POST", f"/memory/{kettle}/act", form)
        assert status == 303, page
        assert _live(arcana_home) == ["tea at four"]  # the control stays
    finally:
        ui.proc.terminate()
        ui.proc.wait(timeout=30)
