"""`arcana ui` in a real browser: the server as a subprocess on a fresh home with real data,
Debian's headless Chromium driven by Playwright, every request the browser makes recorded.

Playwright (not Selenium): its Python wheel carries its own driver, so nothing
is downloaded when it is launched on the system's Chromium, and it reports
every request a page makes (styles, icons, redirects) without a proxy.
Set ARCANA_UI_SCREENSHOTS=man/img to write the manual's screenshots.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner import arcana

from memory.errors import NotFoundError

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def browser_or_skip():
    """Playwright on the system's Chromium; a skip names what is missing (a failure under CI, which installs both)."""
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the playwright package is not installed (pip install -e '.[test]')"
    if reason is None and not CHROMIUM.exists():
        reason = f"no browser at {CHROMIUM} (apt-get install chromium)"
    if reason is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI needs a browser: {reason}")
        pytest.skip(reason)
    return sync_playwright


def made(cli, *args) -> dict:
    done = cli(*args, "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def run(cli, *args) -> None:
    done = cli(*args)
    assert done.exit_code == 0, done.output


@pytest.fixture
def stocked(cli, arcana_home, make_vault):
    """Two agents in a pool; a promoted memory, a hidden one, another agent's private and shared ones; a vault."""
    for name in ("alice", "bob"):
        run(cli, "agent", "create", name)
    run(cli, "pool", "create", "team")
    for name in ("alice", "bob"):
        run(cli, "agent", "join", name, "team")
    ids = {
        "tea": made(cli, "remember", "Alice prefers green tea in the morning", "--agent", "alice", "--importance", "0.95")["id"],
        "elm": made(cli, "remember", "Alice lived at 12 Elm Street until 2019", "--agent", "alice")["id"],
        "bike": made(cli, "remember", "Alice rides a blue bicycle to work", "--agent", "alice")["id"],
        "locker": made(cli, "remember", "Bob keeps his gym locker code 4321 to himself", "--agent", "bob")["id"],
        "standup": made(cli, "remember", "The team standup moved to 9:30 on Mondays", "--agent", "bob",
                        "--scope", "shared", "--pool", "team")["id"],
        "drop": made(cli, "remember", "A passing remark about the weather", "--agent", "alice", "--importance", "0.05")["id"],
    }
    run(cli, "memory", "set", ids["elm"], "--agent", "alice", "--visibility", "hidden")
    run(cli, "prune", "--agent", "alice", "--min-importance", "0.1")  # an audited event, and an archived memory
    notes = {"Home.md": "Start at [[Tea]] and [[Bikes]].", "Tea.md": "Green tea, see [[Home]].",
             "Bikes.md": "Blue bicycle; [[Tea]] after the ride.", "Loose.md": "No links here."}
    run(cli, "vault", "add", str(make_vault(notes, name="notes")), "--name", "notes", "--agent", "alice")
    run(cli, "vault", "index", "notes")
    run(cli, "recall", "green tea", "--agent", "alice")  # some recall activity
    return ids


@pytest.fixture
def server(stocked, arcana_home, tmp_path):
    """`arcana ui` as a real process; yields (url with token, base, stderr path)."""
    errors = tmp_path / "ui-stderr.txt"
    with errors.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "ui", "--bind", "127.0.0.1:0"],
                                stdout=subprocess.DEVNULL, stderr=sink, env=dict(os.environ))
    try:
        url = None
        for _ in range(600):
            found = re.search(r"http://127\.0\.0\.1:\d+/\S*\?token=\S+", errors.read_text())
            if found:
                url = found.group(0)
                break
            assert proc.poll() is None, errors.read_text()
            time.sleep(0.05)
        assert url, errors.read_text()
        yield url, url.split("/?token=")[0], errors
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # uvicorn shuts down cleanly on SIGTERM, then dies of the signal it re-raises
    assert proc.returncode == -15 and "Traceback" not in errors.read_text(), errors.read_text()


def core_entry(home, agent: str | None, memory_id: str, *, global_: bool = False):
    """A memory and its ledger as the core sees them (not the page), read on a thread of its own
    (Playwright's sync API holds this thread's event loop)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from memory.config import load_config
    from memory.operator.edits import OperatorTarget, open_editor

    async def read():
        async with open_editor(home, load_config(home.config_path), OperatorTarget(agent, None, global_)) as editor:
            entry = await editor.resolve(memory_id)
            return entry, await editor.store.history(memory_id)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, read()).result()


def test_the_web_view_in_a_real_browser(server, stocked, arcana_home, tmp_path):
    sync_playwright = browser_or_skip()
    url, base, errors = server
    shots = Path(os.environ.get("ARCANA_UI_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    ids = stocked

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            # Without the token, or with a wrong one: refused, before any page is drawn.
            stranger = browser.new_context()
            stranger.on("request", lambda r: requested.append(r.url))
            page = stranger.new_page()
            for bare in (base + "/", base + "/memories?agent=alice", base + "/?token=guess"):
                response = page.goto(bare)
                assert response.status == 401 and "missing or wrong token" in page.inner_text("#reason")
                assert "Green tea" not in page.content() and "green tea" not in page.content()
            stranger.close()

            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.on("request", lambda r: requested.append(r.url))
            page = context.new_page()
            response = page.goto(url)
            assert response.status == 200 and page.url == base + "/"  # the token swapped for a cookie
            assert page.inner_text("h1") == "Home"
            agents = page.inner_text("#agents")
            assert "alice" in agents and "bob" in agents
            assert "team" in page.inner_text("#pools") and "notes" in page.inner_text("#vaults")
            page.screenshot(path=str(shots / "ui-home.png"), full_page=True)

            # Search: the CLI's recall, in every mode.
            for mode in ("keyword", "semantic", "hybrid"):
                page.goto(f"{base}/memories?agent=alice")
                page.fill("input[name=q]", "green tea")
                page.select_option("select[name=mode]", mode)
                page.click("form.search button")
                assert f"recall ({mode})" in page.inner_text("#how")
                assert page.locator(f'tr[data-id="{ids["tea"]}"]').count() == 1, (mode, page.inner_text("#memories"))
                if mode == "hybrid":
                    page.screenshot(path=str(shots / "ui-search.png"), full_page=True)

                # Another agent's private memory never appears; its shared one does (positive control).
                page.goto(f"{base}/memories?agent=alice&mode={mode}&q=Bob+locker+code")
                assert ids["locker"] not in page.content()
                page.goto(f"{base}/memories?agent=alice&mode={mode}&q=team+standup+Mondays")
                assert page.locator(f'tr[data-id="{ids["standup"]}"]').count() == 1
                # The hidden memory is not recalled either.
                page.goto(f"{base}/memories?agent=alice&mode={mode}&q=Elm+Street")
                assert ids["elm"] not in page.content()

            # The operator's view: hidden and archived marked; still no other agent's private memory.
            page.goto(f"{base}/memories?agent=alice&view=operator&archived=1")
            hidden = page.locator(f'tr[data-id="{ids["elm"]}"]')
            assert hidden.count() == 1 and "hidden" in hidden.get_attribute("class")
            assert hidden.locator(".badge.hidden").inner_text() == "hidden"
            archived = page.locator(f'tr[data-id="{ids["drop"]}"]')
            assert archived.locator(".badge.archived").inner_text() == "archived"
            assert ids["locker"] not in page.content()
            page.screenshot(path=str(shots / "ui-operator.png"), full_page=True)
            page.goto(f"{base}/memories?agent=alice&view=operator&q=locker")
            assert ids["locker"] not in page.content()
            page.goto(f"{base}/memories?agent=bob&view=operator")  # its own agent's page: there (positive control)
            assert page.locator(f'tr[data-id="{ids["locker"]}"]').count() == 1
            response = page.goto(f"{base}/memory/{ids['locker']}?agent=alice")  # not through alice's page either
            assert response.status == 404

            # One memory: versions, sources, copies, ledger; then hide it, confirmed, through the core.
            page.goto(f"{base}/memory/{ids['tea']}?agent=alice")
            assert "green tea" in page.inner_text("#content")
            assert "global" in page.inner_text("#copies")
            assert "insert" in page.inner_text("#ledger") and ids["tea"][:8] in page.inner_text("#versions")
            page.screenshot(path=str(shots / "ui-memory.png"), full_page=True)
            page.click("#actions >> text=Hide")
            assert page.inner_text("h1") == "Hide this memory?"
            page.screenshot(path=str(shots / "ui-confirm.png"), full_page=True)
            page.click("#confirm button")
            assert "Done: hidden (and its global copy)" in page.inner_text("#done")
            assert page.locator("#marks .badge.hidden").count() == 1
            entry, ledger = core_entry(arcana_home, "alice", ids["tea"])
            assert entry.visibility.value == "hidden" and (ledger[-1].op, ledger[-1].actor) == ("visibility", "ui")
            with pytest.raises(NotFoundError):  # every copy: hiding withdraws the global one
                core_entry(arcana_home, None, ids["tea"], global_=True)
            bike, _ = core_entry(arcana_home, "alice", ids["bike"])
            assert bike.visibility.value == "visible"  # the control: nothing else was hidden

            # A stale action: the memory changes after its page was drawn; the confirmed action is refused.
            page.goto(f"{base}/memory/{ids['bike']}?agent=alice")
            page.click("#actions >> text=Forget")
            arcana("memory", "set", ids["bike"], "--agent", "alice", "--pin")
            before, before_ledger = core_entry(arcana_home, "alice", ids["bike"])
            with page.expect_response(lambda r: r.url.endswith("/act")) as answer:
                page.click("#confirm button")
            assert answer.value.status == 409
            assert "changed since it was shown" in page.inner_text("#reason")
            after, after_ledger = core_entry(arcana_home, "alice", ids["bike"])
            assert not after.archived and after.pinned and len(after_ledger) == len(before_ledger)
            page.goto(f"{base}/memory/{ids['bike']}?agent=alice")  # drawn afresh, the same action goes through
            page.click("#actions >> text=Forget")
            page.click("#confirm button")
            assert "Done: archived" in page.inner_text("#done")
            assert core_entry(arcana_home, "alice", ids["bike"])[0].archived

            # Malformed requests: a 4xx page with a one-line reason, never a traceback.
            for bad, status in ((f"{base}/memories?agent=alice&page=abc", 400), (f"{base}/memories", 400),
                                (f"{base}/memory/{ids['tea']}/confirm?agent=alice&action=melt&seq=1", 400),
                                (f"{base}/nowhere", 404)):
                response = page.goto(bad)
                assert response.status == status, bad
                reason = page.inner_text("#reason")
                assert reason and "\n" not in reason and "Traceback" not in page.content()

            page.goto(f"{base}/activity?agent=alice")
            assert page.locator("#growth svg polyline").count() == 1 and page.locator("#recalls svg rect.bar").count() >= 2
            page.screenshot(path=str(shots / "ui-activity.png"), full_page=True)
            page.goto(f"{base}/graph?vault=notes")
            assert page.locator("#graph svg circle").count() == 4 and page.locator("#graph svg line").count() == 4
            page.screenshot(path=str(shots / "ui-graph.png"), full_page=True)
            page.goto(f"{base}/audit")
            assert "prune" in page.inner_text("#audit")
            page.screenshot(path=str(shots / "ui-audit.png"), full_page=True)
            context.close()
        finally:
            browser.close()

    outside = [u for u in requested if not u.startswith(base + "/")]
    assert requested and outside == []  # nothing fetched from anywhere but this server
    assert any(u.endswith("/static/style.css") for u in requested)  # the control: its own assets were
    assert "Traceback" not in errors.read_text()


def test_requests_a_browser_would_not_make_are_refused_with_a_reason(server, stocked):
    """DNS rebinding (a foreign Host), another site's form (a foreign Origin), malformed forms."""
    import httpx

    url, base, errors = server
    with httpx.Client(base_url=base, follow_redirects=False) as client:
        swap = client.get(url.removeprefix(base))
        root = httpx.URL(base).path  # the run's path: every page is under it, and the cookie with them
        assert swap.status_code == 303 and swap.headers["location"] == root + "/"
        cookie = swap.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        assert f"Path={root};" in cookie + ";" and root.startswith("/v-")
        assert client.get("/").status_code == 200  # the cookie is the credential now (the control)
        rebound = client.get("/", headers={"Host": "rebind.example"})
        assert rebound.status_code == 421 and "Host header" in rebound.text
        act = f"/memory/{stocked['bike']}/act"
        form = {"agent": "alice", "action": "forget", "seq": "1"}
        foreign = client.post(act, data=form, headers={"Origin": "http://attacker.example"})
        assert foreign.status_code == 403
        assert client.post(act, content=b"{}", headers={"Content-Type": "application/json"}).status_code == 415
        big = client.post(act, data={**form, "pad": "x" * 10_000})
        assert big.status_code == 413
        missing = client.post(act, data={"agent": "alice", "action": "forget"})
        assert missing.status_code == 400 and "seq" in missing.text
        stale = client.post(act, data=form)  # ledger row 1 is another memory's insert, never this one's newest
        assert stale.status_code == 409 and "changed since it was shown" in stale.text
    assert "Traceback" not in errors.read_text()


@pytest.mark.parametrize("bind", ["0.0.0.0:8765", "192.168.1.5:0", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:\u00b2"])
def test_ui_serves_loopback_only(bind, arcana_home):
    done = subprocess.run([sys.executable, "-m", "arcana_cli.main", "ui", "--bind", bind],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 2 and "--bind" in done.stderr and "Traceback" not in done.stderr
    assert "HOST:PORT" in done.stderr or "loopback only" in done.stderr, done.stderr  # says how, not int()'s words
    assert "token=" not in done.stderr


def test_ui_refuses_a_port_in_use(arcana_home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "arcana_cli.main", "ui", "--bind", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 2 and "in use" in done.stderr.lower() and "token=" not in done.stderr
