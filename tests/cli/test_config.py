"""`arcana config` through the real Typer app: dotted keys, validation before an
atomic write, suggestions for unknown keys, malformed files left untouched."""

from __future__ import annotations

import json
import os
import stat
import threading
import time

import pytest

from memory.config import ArcanaConfig, load_config, valid_keys


@pytest.fixture
def config_path(arcana_home):
    return arcana_home.config_path


def test_path_and_show_before_init(cli, config_path):
    path = cli("config", "path")
    assert (path.exit_code, path.stdout.strip()) == (0, str(config_path))
    shown = json.loads(cli("config", "show", "--json").stdout)
    assert shown["recall"]["limit"] == ArcanaConfig().recall.limit
    assert shown["memory"]["global"] == "vector"  # aliases are shown as written in the file
    assert not config_path.exists()  # reading never creates the file


def test_set_then_get_dotted_keys(cli, config_path):
    assert cli("config", "set", "recall.limit", "25").exit_code == 0
    assert cli("config", "set", "prune.mode", "purge").exit_code == 0
    assert cli("config", "set", "memory.extraction.summarise_on_close", "false").exit_code == 0
    assert cli("config", "set", "vaults.notes.path", "/tmp/notes").exit_code == 0
    assert cli("config", "get", "recall.limit").stdout.strip() == "25"
    assert cli("config", "get", "prune.mode").stdout.strip() == "purge"
    assert json.loads(cli("config", "get", "memory.extraction.summarise_on_close", "--json").stdout) is False
    assert cli("config", "get", "vaults.notes.path").stdout.strip() == "/tmp/notes"
    on_disk = json.loads(config_path.read_text())
    assert on_disk["recall"]["limit"] == 25 and on_disk["vaults"]["notes"]["path"] == "/tmp/notes"
    assert load_config(config_path).prune.mode.value == "purge"


def test_set_json_output(cli):
    result = cli("config", "set", "embedding.providers", '["ollama", "fastembed"]', "--json")
    assert json.loads(result.stdout) == {"key": "embedding.providers", "value": ["ollama", "fastembed"]}


@pytest.mark.parametrize(
    "args, suggestion",
    [
        (("get", "recall.limt"), "recall.limit"),
        (("set", "prune.max_entrys", "5"), "prune.max_entries"),
        (("get", "embedding.ollama_ulr"), "embedding.ollama_url"),
    ],
)
def test_unknown_key_suggests_the_nearest_and_exits_2(cli, config_path, args, suggestion):
    result = cli("config", *args)
    assert result.exit_code == 2  # the key is the command line's, not the file's (issue 21 item 9)
    assert f"did you mean '{suggestion}'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""
    assert not config_path.exists()


def test_invalid_value_is_rejected_before_writing(cli, config_path):
    assert cli("config", "set", "recall.limit", "12").exit_code == 0
    before = config_path.read_bytes()
    for key, value in (("recall.limit", "0"), ("recall.limit", "many"), ("prune.mode", "shred"),
                       ("memory.extraction.strategy", "magic")):
        result = cli("config", "set", key, value)
        assert result.exit_code == 2, (key, value)  # a bad argument: usage, the file is fine
        assert key in result.stderr
        assert config_path.read_bytes() == before


def test_keys_lists_every_settable_key(cli):
    listed = cli("config", "keys").stdout.split()
    assert listed == valid_keys()
    assert {"recall.limit", "prune.min_importance", "vaults.<name>.path"} <= set(listed)
    assert json.loads(cli("config", "keys", "--json").stdout) == listed


@pytest.mark.parametrize(
    "content, named",
    [
        ("{not json", "invalid JSON"),
        ('{"recall": {"limit": -3}}', "recall.limit"),
        ('{"recal": {}}', "recal"),
        ("[1, 2]", "top level"),
        # Python's json reads these; they were a traceback (int()'s 4,300 digits) or a float JSON has not
        ('{"memory": {"consolidate_every": ' + "1" * 5000 + "}}", "5000 digits"),
        ('{"embedding": {"vector_weight": NaN}}', "NaN is not a JSON value"),
        ('{"embedding": {"vector_weight": 1e400}}', "too large"),
    ],
)
def test_malformed_config_is_one_line_exit_4_and_untouched(cli, config_path, content, named):
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(content)
    for args in (("config", "validate"), ("config", "get", "recall.limit"), ("config", "set", "recall.limit", "3"),
                 ("config", "show"), ("init",)):
        result = cli(*args)
        assert result.exit_code == 4, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(config_path) in lines[0] and named in lines[0], (args, lines)
        assert result.stdout == ""
        assert config_path.read_text() == content


def test_a_config_value_json_cannot_keep_is_refused_and_an_ordinary_one_is_set(cli, config_path):
    """`config set` read its value with json.loads: 5,000 digits raised out of int() (a traceback)."""
    assert cli("init").exit_code == 0
    before = config_path.read_text()
    refused = cli("config", "set", "memory.consolidate_every", "1" * 5000)
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and "5000 digits" in refused.stderr
    assert config_path.read_text() == before
    assert cli("config", "set", "memory.consolidate_every", "7").exit_code == 0
    assert cli("config", "get", "memory.consolidate_every").stdout.strip() == "7"


def test_validate_ok_and_missing(cli, config_path):
    missing = cli("config", "validate", "--json")
    assert (missing.exit_code, json.loads(missing.stdout)["exists"]) == (0, False)
    assert cli("init").exit_code == 0
    valid = cli("config", "validate")
    assert valid.exit_code == 0 and valid.stdout.strip() == f"{config_path}: ok"


def test_set_keeps_a_symlinked_config_linked(cli, config_path, tmp_path):
    """A config.json linked from a dotfiles folder was replaced by a plain file: the link was gone and
    the linked file silently kept the old values."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    linked = dotfiles / "arcana.json"
    linked.write_text(json.dumps({"recall": {"limit": 4}}))
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.symlink_to(linked)
    assert cli("config", "set", "recall.limit", "7").exit_code == 0
    assert config_path.is_symlink() and config_path.resolve() == linked
    assert json.loads(linked.read_text())["recall"]["limit"] == 7
    got = cli("config", "get", "recall.limit")
    assert (got.exit_code, got.stdout.strip()) == (0, "7")
    assert [p.name for p in dotfiles.iterdir()] == ["arcana.json"]  # no temporary file left beside it


def test_a_dangling_symlinked_config_is_exit_4_and_a_linked_one_is_read(cli, arcana_home, config_path, tmp_path):
    """A config.json (or memory-adapters.json) linked to a file that is gone was read as defaults:
    the user's settings silently vanished. Positive control: the same link to a real file is read."""
    linked = tmp_path / "dotfiles" / "arcana.json"
    linked.parent.mkdir()
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.symlink_to(linked)
    connections = arcana_home.connections_path
    connections.parent.mkdir(parents=True, exist_ok=True)
    connections.symlink_to(tmp_path / "dotfiles" / "adapters.json")
    for args in (("config", "show"), ("config", "get", "recall.limit"), ("config", "validate"), ("init",)):
        result = cli(*args)
        assert result.exit_code == 4, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(config_path) in lines[0] and "does not exist" in lines[0], (args, lines)
    linked.write_text(json.dumps({"recall": {"limit": 4}}))
    assert cli("config", "get", "recall.limit").stdout.strip() == "4"
    assert cli("agent", "create", "ada").exit_code == 0
    refused = cli("remember", "fact", "--agent", "ada")  # reads connections/memory-adapters.json
    assert refused.exit_code == 4 and str(connections) in refused.stderr and "does not exist" in refused.stderr
    (tmp_path / "dotfiles" / "adapters.json").write_text("{}")
    assert cli("remember", "fact", "--agent", "ada").exit_code == 0


def test_set_replaces_the_file_atomically(cli, config_path):
    assert cli("config", "set", "recall.limit", "2").exit_code == 0
    first = config_path.open()  # held open, so its inode cannot be freed and handed to a later file
    first_inode = os.fstat(first.fileno()).st_ino
    seen: list[str] = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                seen.append(config_path.read_text())
            except FileNotFoundError:
                seen.append("<missing>")
            time.sleep(0.001)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for limit in range(3, 20):
            assert cli("config", "set", "recall.limit", str(limit)).exit_code == 0
    finally:
        stop.set()
        thread.join()
    assert seen and "<missing>" not in seen
    assert all(json.loads(text)["recall"]["limit"] in range(2, 20) for text in seen)  # never half-written
    assert config_path.stat().st_ino != first_inode  # replaced, not rewritten in place
    first.close()
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    assert [p.name for p in config_path.parent.iterdir() if p.name.startswith(".config.")] == []


def test_an_immutable_config_is_named_with_its_fix(arcana_home, config_path):
    """config set on an immutable config.json named the temp file it had written and already removed
    (`.config.XXXX.tmp: operation not permitted; check that file`), not config.json."""
    from immutable import immutable
    from runner import run_arcana

    assert run_arcana("config", "set", "recall.limit", "6", home=arcana_home).returncode == 0
    before = config_path.read_bytes()
    with immutable(config_path):
        done = run_arcana("config", "set", "recall.limit", "7", home=arcana_home)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"arcana: error: {config_path}: operation not permitted;"), done.stderr
    assert f"chattr -i -a {config_path}" in done.stderr and ".tmp" not in done.stderr
    assert config_path.read_bytes() == before and [p.name for p in config_path.parent.glob(".config.*")] == []
    done = run_arcana("config", "set", "recall.limit", "7", home=arcana_home)  # control: once it may change again
    assert done.returncode == 0 and json.loads(config_path.read_text())["recall"]["limit"] == 7


def test_a_key_given_twice_is_refused_in_every_config_file_and_nothing_is_dropped(cli, arcana_home, config_path):
    """JSON keeps a duplicated key's last value: a hand-added second "pools" block hid the first pool,
    `config validate` said ok, and the next `config set` wrote the file back without it."""
    assert cli("agent", "create", "ada").exit_code == 0
    card = next(arcana_home.agents_dir.glob("*/agent.json"))
    card_text = card.read_text()
    budgets = arcana_home.connections_path
    budgets.parent.mkdir(parents=True, exist_ok=True)
    twice = '{"pools": {"team": {"members": []}},\n "pools": {"ops": {"members": []}}}\n'
    config_path.write_text(twice)
    for args in (("config", "validate"), ("config", "set", "recall.limit", "3"), ("config", "show"),
                 ("recall", "tea", "--agent", "ada")):
        result = cli(*args)
        assert result.exit_code == 4, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(config_path) in lines[0] and "'pools' is given twice" in lines[0], (args, lines)
    assert config_path.read_text() == twice
    # control: the two blocks merged by hand load, and a later set keeps both pools
    config_path.write_text('{"pools": {"team": {"members": []}, "ops": {"members": []}}}')
    assert cli("config", "set", "recall.limit", "3").exit_code == 0
    assert set(json.loads(config_path.read_text())["pools"]) == {"team", "ops"}
    # an agent card and the budgets file alike: one line naming the file and the key, nothing rewritten
    card.write_text(card_text.replace('"model": null,', '"model": null, "model": null,'))
    budgets.write_text('{"private": {"read_timeout_ms": 900}, "private": {}}')
    for path, key, args in ((card, "model", ("agent", "set", "ada", "--system-prompt", "hi")),
                            (budgets, "private", ("recall", "tea", "--agent", "ada"))):
        before = path.read_text()
        result = cli(*args)
        assert result.exit_code == 4, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and f"'{key}' is given twice" in lines[0], lines
        assert path.read_text() == before
        path.write_text(card_text if path == card else '{"private": {"read_timeout_ms": 900}}')
    assert cli("agent", "set", "ada", "--system-prompt", "hi").exit_code == 0  # control: each file repaired
    assert cli("recall", "tea", "--agent", "ada").exit_code == 0


def test_an_ollama_url_no_request_could_use_is_refused_as_a_models_base_url_is(cli, config_path):
    """embedding.ollama_url took 'notaurl', a bad [IPv6] host and a port of 99999 (every embed then failed,
    `remember` stored memories without vectors), and a user:password, which `arcana doctor` printed."""
    assert cli("config", "set", "embedding.ollama_url", "http://127.0.0.1:11434/").exit_code == 0
    before = config_path.read_text()
    for url in ("notaurl", "http://[::1", "http://h:99999", "http://u:secret@127.0.0.1:11434"):
        result = cli("config", "set", "embedding.ollama_url", url)
        assert result.exit_code == 2, url
        assert "embedding.ollama_url" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert config_path.read_text() == before
    # control: a usable URL is stored (its trailing / dropped, as for a model's base_url)
    assert json.loads(config_path.read_text())["embedding"]["ollama_url"] == "http://127.0.0.1:11434"
    assert cli("config", "set", "embedding.ollama_url", "https://[::1]:8080/ollama").exit_code == 0
    # written by hand, it is the file's error for every command that reads the config, the file untouched
    text = before.replace("http://127.0.0.1:11434", "http://u:secret@127.0.0.1:11434")
    config_path.write_text(text)
    for args in (("config", "validate"), ("remember", "tea at five", "--agent", "ada")):
        result = cli(*args)
        lines = result.stderr.strip().splitlines()
        assert (result.exit_code, len(lines)) == (4, 1), (args, lines)
        assert str(config_path) in lines[0] and "embedding.ollama_url" in lines[0]
    doctor = cli("doctor")  # the diagnosis names it as a failed config row, and prints no password
    assert doctor.exit_code == 1 and "embedding.ollama_url" in doctor.stdout
    assert "secret" not in doctor.stdout + doctor.stderr
    assert config_path.read_text() == text


def test_a_vault_path_is_absolute_however_it_is_set(cli, config_path, tmp_path):
    """`vault add` stores the folder resolved, but `config set vaults.v.path notes` (or '~/notes', quoted)
    was stored as typed: each working directory meant another folder, and a `vault index` run from
    elsewhere dropped the first folder's notes from the index and took in another's."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.md").write_text("# Tea\nThe tea note.\n")
    assert cli("config", "set", "vaults.v.path", str(folder)).exit_code == 0  # control: the full path
    before = config_path.read_text()
    for typed in ("notes", "~/notes", "./notes"):
        result = cli("config", "set", "vaults.v.path", typed)
        assert result.exit_code == 2 and "vaults.v.path" in result.stderr and "not an absolute path" in result.stderr
        assert config_path.read_text() == before
    indexed = cli("vault", "index", "v", "--json")
    assert indexed.exit_code == 0, indexed.stderr
    assert "tea.md" in cli("vault", "search", "v", "tea", "--json").stdout
    text = before.replace(json.dumps(str(folder)), '"notes"')  # written by hand: the file's error, one line
    config_path.write_text(text)
    for args in (("vault", "index", "v"), ("vault", "list"), ("config", "validate")):
        result = cli(*args)
        lines = result.stderr.strip().splitlines()
        assert (result.exit_code, len(lines)) == (4, 1), (args, lines)
        assert str(config_path) in lines[0] and "vaults.v.path" in lines[0]
    assert config_path.read_text() == text


def test_config_set_holds_a_vaults_agent_pool_and_path_to_vault_adds_rules(cli, arcana_home, config_path, tmp_path):
    """`config set vaults.v.agent nobody` (or `.pool nopool`) was stored: the vault attached to nothing
    until an index failed on it; an agent's name was stored where `vault add` stores its id (a rename broke
    it); both could be set at once, and `.path` could point into the home. Each is refused now with
    `vault add`'s message and code, the file unchanged; a known agent is stored by id."""
    folder = tmp_path / "notes"
    folder.mkdir()
    assert cli("agent", "create", "ada").exit_code == 0
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "v").exit_code == 0
    before = config_path.read_text()
    for key, value, code, said in (("vaults.v.agent", "nobody", 3, "no agent named 'nobody'"),
                                   ("vaults.v.pool", "nopool", 3, "no pool named 'nopool'"),
                                   ("vaults.v.path", str(arcana_home.root / "notes"), 2, "inside the Arcana home")):
        result = cli("config", "set", key, value)
        assert (result.exit_code, said in result.stderr) == (code, True), (key, result.stderr)
        assert config_path.read_text() == before
    # Controls: a known agent is stored by its id, as `vault add --agent` stores it; then a pool beside it is refused.
    assert cli("config", "set", "vaults.v.agent", "ada").exit_code == 0
    assert load_config(config_path).vaults["v"].agent == json.loads(cli("agent", "list", "--json").stdout)[0]["id"]
    both = cli("config", "set", "vaults.v.pool", "team")
    assert both.exit_code == 2 and "`arcana config set vaults.v.agent null` first" in both.stderr
    assert cli("config", "set", "vaults.v.agent", "null").exit_code == 0
    assert cli("config", "set", "vaults.v.pool", "team").exit_code == 0 and load_config(config_path).vaults["v"].pool == "team"


def test_config_set_refuses_an_extraction_language_with_no_cue_set(cli, config_path):
    """`config set memory.extraction.language xx` was stored, and every later `arcana run` failed on it
    (exit 4); it is refused now, naming the registered languages."""
    from memory import languages

    result = cli("config", "set", "memory.extraction.language", "xx")
    registered = ", ".join(languages.codes("signal"))  # en, pt, and any another test of this process registered
    assert result.exit_code == 2 and f"no language 'xx' is registered (registered: {registered})" in result.stderr
    assert not config_path.exists()
    assert cli("config", "set", "memory.extraction.language", "pt").exit_code == 0  # control
    assert load_config(config_path).memory.extraction.language == "pt"


def test_every_way_to_set_an_extraction_language_refuses_one_with_no_cue_set(cli, arcana_home, config_path):
    """The check lived in the `config set` command, so the core call behind it took "xx", and
    `agent set --extraction language=xx` stored it in the card (every later run of the agent then
    failed). Now the core's settings calls refuse it, whichever way in."""
    from memory.errors import InvalidRequestError
    from memory.operations.settings import set_config_key

    with pytest.raises(InvalidRequestError, match="no language 'xx' is registered"):
        set_config_key(arcana_home, "memory.extraction.language", "xx")
    assert not config_path.exists()
    assert set_config_key(arcana_home, "memory.extraction.language", "pt") == "pt"  # control
    assert cli("agent", "create", "ada").exit_code == 0
    refused = cli("agent", "set", "ada", "--extraction", "language=xx")
    assert refused.exit_code == 2 and "--extraction language: no language 'xx' is registered" in refused.stderr
    assert json.loads(cli("agent", "show", "ada", "--json").stdout)["extraction"] == {}
    taken = cli("agent", "set", "ada", "--extraction", "language=pt", "--json")  # control
    assert taken.exit_code == 0 and json.loads(taken.stdout)["extraction"] == {"language": "pt"}
