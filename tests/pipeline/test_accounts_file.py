"""The accounts file: many companies under one installation, each read with its own key.

These tests hold the precedence (account table > [defaults] > per-account variables > built-in
defaults), the file's discovery (CREDITLENS_CONFIG, else ./creditlens.toml when present), and
that every mistake is one line naming the file, the account and the field, never showing a key
or a hidden value.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.api.options import API_KEY_ENV
from pipelines.config.accounts_file import CONFIG_ENV, DEFAULT_CONFIG, FIELDS
from pipelines.config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk_live_9f3c2a7e1b5d4c8a0e6f"
URL_SECRET = "hunter2pass"

AGENCY = """
[defaults]
base_url = "https://api.example.com"
page_size = 50
concurrency = 2

[[accounts]]
name = "acme"
api_key_env = "ACME_API_KEY"

[[accounts]]
name = "globex"
base_url = "https://eu.api.example.com/"
api_key_env = "GLOBEX_API_KEY"
range_start_param = "from"
range_end_param = "to"
sign_convention = "unsigned"
history_limit = 730
snapshot_fields = { "consumption.balance" = "currentBalance" }

[[accounts]]
name = "initech"
api_key_env = "INITECH_API_KEY"
page_size = 100
timeout_s = 5
"""

# The installation and the per-account fallbacks, as an agency's scheduler would set them.
ENV = {
    "CREDITLENS_WAREHOUSE": "/data/agency.duckdb",
    "CREDITLENS_TIMEOUT": "12.5",
    "CREDITLENS_CONCURRENCY": "8",
    "CREDITLENS_ACCOUNT": "ignored-with-a-file",
    "CREDITLENS_BASE_URL": "https://fallback.example.com",
}


def write(directory: Path, text: str, name: str = DEFAULT_CONFIG) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_three_accounts_over_defaults_over_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, AGENCY)
    settings = Settings.from_env(ENV, cwd=tmp_path)
    assert settings.config_file == path
    assert settings.warehouse == Path("/data/agency.duckdb")  # installation: the environment's
    acme, globex, initech = settings.accounts
    assert [a.name for a in settings.accounts] == ["acme", "globex", "initech"]
    # [defaults] over the environment, the environment over the built-in defaults.
    assert acme.base_url == "https://api.example.com" and acme.api_key_env == "ACME_API_KEY"
    assert (acme.api.page_size, acme.api.concurrency, acme.api.timeout_s) == (50, 2, 12.5)
    assert (acme.api.max_retries, acme.sign_convention, acme.history_limit) == (6, "signed", 3660)
    # The account's table over everything.
    assert globex.base_url == "https://eu.api.example.com"
    assert (globex.api.range_start_param, globex.api.range_end_param) == ("from", "to")
    assert (globex.sign_convention, globex.history_limit) == ("unsigned", 730)
    assert globex.snapshot_fields == {"consumption.balance": "currentBalance"}
    assert (initech.api.page_size, initech.api.timeout_s, initech.api.concurrency) == (100, 5, 2)
    # Each account reads its own key from its own variable, when the client needs it.
    api = globex.api_settings({"GLOBEX_API_KEY": KEY, "ACME_API_KEY": "other"})
    assert api.api_key.get_secret_value() == KEY
    with pytest.raises(ConfigurationError, match=r"^INITECH_API_KEY is not set"):
        initech.api_settings({API_KEY_ENV: KEY})
    # What Dagster carries: every account, no key, and the same settings back.
    assert Settings.model_validate_json(settings.model_dump_json()) == settings


def test_without_a_file_the_environment_is_one_account(tmp_path: Path) -> None:
    settings = Settings.from_env(ENV, cwd=tmp_path)
    assert settings.config_file is None
    assert settings.account.name == "ignored-with-a-file"
    assert settings.account.base_url == "https://fallback.example.com"
    assert settings.account.api.concurrency == 8


def test_the_working_directory_file_is_picked_up_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, AGENCY)
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env(ENV)
    assert settings.config_file == path and len(settings.accounts) == 3


def test_config_names_the_file_relative_to_the_working_directory(tmp_path: Path) -> None:
    write(tmp_path, '[[accounts]]\nname = "ignored"\n')  # the default file loses to the named
    path = write(tmp_path, '[[accounts]]\nname = "solo"\n', "agency.toml")
    settings = Settings.from_env({CONFIG_ENV: "agency.toml"}, cwd=tmp_path)
    assert settings.config_file == path and settings.account.name == "solo"
    absolute = Settings.from_env({CONFIG_ENV: str(path)}, cwd=Path("/"))
    assert absolute.config_file == path


@pytest.mark.parametrize("named", ["missing.toml", "."])
def test_config_naming_no_file_is_one_line(tmp_path: Path, named: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({CONFIG_ENV: named}, cwd=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{CONFIG_ENV}: ") and named in message and "\n" not in message


def test_a_bad_variable_is_still_named_by_its_variable(tmp_path: Path) -> None:
    write(tmp_path, AGENCY)
    with pytest.raises(ConfigurationError, match=r"^CREDITLENS_CONCURRENCY: .*got '99'$"):
        Settings.from_env({**ENV, "CREDITLENS_CONCURRENCY": "99"}, cwd=tmp_path)


ACME = '[[accounts]]\nname = "acme"\napi_key_env = "ACME_API_KEY"\n'

# The file, the start of the one line it must give, and what that line must not hold.
MISTAKES = [
    (
        ACME + "page_size = 500\n",
        'creditlens.toml: account "acme": page_size: Input should be less than or equal to 100, '
        "got 500",
        None,
    ),
    (
        ACME + f'base_url = "ftp://user:{URL_SECRET}@api.example.com"\n',
        'creditlens.toml: account "acme": base_url: must start with http:// or https://',
        URL_SECRET,
    ),
    (
        f'[[accounts]]\nname = "acme"\napi_key_env = "{KEY}"\n',
        'creditlens.toml: account "acme": api_key_env: must name an environment variable',
        KEY,
    ),
    (
        f'[[accounts]]\nname = "acme"\napi_key_env = "{KEY.lower()}"\n',
        'creditlens.toml: account "acme": api_key_env: must name an environment variable',
        KEY.lower(),
    ),
    (
        ACME + f'api_key = "{KEY}"\n',
        'creditlens.toml: account "acme": api_key: a key never goes in this file: set api_key_env',
        KEY,
    ),
    (ACME + f'token = "{KEY}"\n', 'creditlens.toml: account "acme": token: a key never', KEY),
    (ACME + f'apiKey = "{KEY}"\n', 'creditlens.toml: account "acme": apiKey: a key never', KEY),
    (
        f'[defaults]\nsecret = "{KEY}"\n' + ACME,
        "creditlens.toml: [defaults]: secret: a key never goes in this file",
        KEY,
    ),
    (f'api_key = "{KEY}"\n' + ACME, "creditlens.toml: api_key: a key never goes", KEY),
    (
        ACME + f'{KEY} = "x"\n',
        'creditlens.toml: account "acme": a field whose name looks like a key: refused',
        KEY,
    ),
    (
        ACME + "page_sise = 50\n",
        'creditlens.toml: account "acme": page_sise: unknown field, did you mean "page_size"?',
        None,
    ),
    (
        ACME + "CREDITLENS_TIMEOUT = 5\n",
        'creditlens.toml: account "acme": CREDITLENS_TIMEOUT: unknown field, did you mean '
        '"timeout_s"?',
        None,
    ),
    (
        ACME + 'warehouse = "/data/acme.duckdb"\n',
        'creditlens.toml: account "acme": warehouse: an installation setting, not an '
        "account's: set CREDITLENS_WAREHOUSE in the environment",
        None,
    ),
    (
        ACME + "[accounts.api]\npage_size = 5\n",
        'creditlens.toml: account "acme": api: write its fields flat',
        None,
    ),
    (
        ACME + "history_limit = true\n",
        'creditlens.toml: account "acme": history_limit: takes no true/false',
        None,
    ),
    (
        ACME + '[[accounts]]\nname = "globex"\n' + ACME,
        'creditlens.toml: account "acme": listed twice (accounts[0] and accounts[2])',
        None,
    ),
    (
        ACME + '[[accounts]]\napi_key_env = "GLOBEX_API_KEY"\n',
        "creditlens.toml: accounts[1]: name: missing",
        None,
    ),
    (ACME + "[[accounts]]\nname = 7\n", "creditlens.toml: accounts[1]: name: must be", None),
    (
        f'[[accounts]]\nname = "{KEY}"\n',
        "creditlens.toml: accounts[0]: name: looks like a key: refused, value not shown",
        KEY,
    ),
    (
        '[defaults]\nbase_url = "https://api.example.com"\n',
        "creditlens.toml: no accounts: list each company as [[accounts]]",
        None,
    ),
    ("accounts = []\n", "creditlens.toml: no accounts", None),
    (
        '[accounts]\nname = "acme"\n',
        "creditlens.toml: accounts: a table where the list of accounts should be",
        None,
    ),
    ('accounts = ["acme"]\n', "creditlens.toml: accounts[0]: not a table", None),
    (
        '[[account]]\nname = "acme"\n',
        'creditlens.toml: account: unknown table, did you mean "accounts"?',
        None,
    ),
    (
        "[defaults]\nmax_retries = -1\n" + ACME,
        "creditlens.toml: [defaults]: max_retries: Input should be greater than or equal to 0, "
        "got -1",
        None,
    ),
    ('[defaults]\nname = "all"\n' + ACME, "creditlens.toml: [defaults]: name: each account", None),
    (
        ACME + 'page_size = 50\nrange_format "epoch"\n',
        "creditlens.toml: line 5, column 14: Expected '=' after a key in a key/value pair",
        "epoch",
    ),
    (
        '[[accounts]]\nname = "acme\napi_key_env = "ACME_API_KEY"\n',
        "creditlens.toml: line 2, column 13: Illegal character",
        None,
    ),
]

MISTAKE_IDS = [
    "out-of-range",
    "url-with-credentials",
    "key-as-variable",
    "lowercase-key-as-variable",
    "api_key",
    "token",
    "apiKey",
    "secret-in-defaults",
    "top-level-api_key",
    "key-as-field-name",
    "typo",
    "variable-as-field",
    "installation-setting",
    "api-table",
    "boolean",
    "duplicate-name",
    "no-name",
    "name-not-a-string",
    "key-as-name",
    "no-accounts",
    "empty-accounts",
    "accounts-table",
    "account-not-a-table",
    "account-singular",
    "defaults-value",
    "name-in-defaults",
    "syntax",
    "unterminated-string",
]


@pytest.mark.parametrize(("text", "start", "hidden"), MISTAKES, ids=MISTAKE_IDS)
def test_a_mistake_is_one_line_naming_file_account_and_field(
    tmp_path: Path, text: str, start: str, hidden: str | None
) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({API_KEY_ENV: KEY}, cwd=tmp_path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(start), message
    assert KEY not in message and KEY.lower() not in message
    if hidden is not None:
        assert hidden not in message


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    (tmp_path / DEFAULT_CONFIG).write_bytes(b'[[accounts]]\nname = "\xff"\n')
    with pytest.raises(ConfigurationError, match=r"^creditlens\.toml: not UTF-8 text$"):
        Settings.from_env({}, cwd=tmp_path)


def test_a_name_with_a_line_break_keeps_the_message_on_one_line(tmp_path: Path) -> None:
    write(tmp_path, '[[accounts]]\nname = "ac\\nme"\npage_size = 0\n')
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({}, cwd=tmp_path)
    assert str(caught.value).startswith('creditlens.toml: account "ac\\nme": page_size: ')


def test_a_file_outside_the_working_directory_is_named_by_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, ACME + "page_size = 500\n", "agency.toml")
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({CONFIG_ENV: str(path)}, cwd=tmp_path / "elsewhere")
    assert str(caught.value).startswith(f'{path}: account "acme": page_size: ')


def test_the_reference_lists_every_field_an_account_table_takes() -> None:
    """docs/configuration.md's account table (generated: tests/pipeline/test_settings.py) names
    exactly the fields the loader accepts."""
    reference = (ROOT / "docs" / "configuration.md").read_text()
    table = reference.split("## Each account", 1)[1].split("\n## ", 1)[0]
    listed = {
        name
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([a-z_]+)`", line.split("|")[1])
    }
    assert listed == FIELDS, sorted(listed ^ FIELDS)
