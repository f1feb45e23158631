"""Inventories: the documented format loads, every mistake is one line naming file and entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.audit.inventory import (
    InventoryError,
    KeyUnavailable,
    load_inventory,
    resolve_key,
)

SECRET = "sk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e"

TOML = """
base_url = "https://api.example.test"

[[keys]]
name = "nightly-sync"
env = "SYNC_KEY"
scope = "full"
places = [{ place = "creditlens nightly sync", kind = "server" }]

[[keys]]
name = "web-widget"
file = "secrets/widget.key"
scope = "campaigns"
base_url = "https://eu.api.example.test/"
places = [
  { place = "web/static/widget.js", kind = "client-side" },
  { place = "github.com/acme/web", kind = "Public" },
]
"""

YAML = """
keys:
  - name: crm-connector
    env: CRM_KEY
    scope: [campaigns]
    places:
      - {place: "Acme CRM", kind: vendor}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_toml_inventory_loads_with_places_scopes_and_base_urls(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "keys.toml", TOML))
    assert inv.base_url == "https://api.example.test"
    sync, widget = inv.keys
    assert sync.intended == {"campaigns", "billing"}
    assert sync.env == "SYNC_KEY" and sync.file is None and sync.base_url is None
    assert widget.file == tmp_path / "secrets" / "widget.key"
    assert widget.base_url == "https://eu.api.example.test"
    assert [p.kind for p in widget.places] == ["client-side", "public"]
    flagged = [p.place for p in widget.flagged_places]
    assert flagged == ["web/static/widget.js", "github.com/acme/web"]
    assert sync.flagged_places == ()


def test_yaml_inventory_loads(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "keys.yaml", YAML))
    (crm,) = inv.keys
    assert crm.scope == ("campaigns",) and crm.places[0].kind == "vendor"


def test_keys_resolve_from_env_and_file(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "keys.toml", TOML))
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "widget.key").write_text(SECRET + "\n")
    assert resolve_key(inv.keys[0], {"SYNC_KEY": f"  {SECRET} "}) == SECRET
    assert resolve_key(inv.keys[1], {}) == SECRET


def test_unavailable_keys_say_where_they_were_looked_for(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "keys.toml", TOML))
    with pytest.raises(KeyUnavailable, match="SYNC_KEY is not set"):
        resolve_key(inv.keys[0], {})
    with pytest.raises(KeyUnavailable, match=r"widget\.key does not exist"):
        resolve_key(inv.keys[1], {})


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (f'[[keys]]\nname = "a"\nkey = "{SECRET}"\nscope = "full"\n', "must not be written"),
        (f'[[keys]]\nname = "a"\napi_key = "{SECRET}"\nscope = "full"\n', "must not be written"),
        (f'[[keys]]\nname = "a"\nenv = "{SECRET}-x"\nscope = "full"\n', "'env' must be the name"),
        ('[[keys]]\nname = "a"\nscope = "full"\n', "exactly one of env"),
        ('[[keys]]\nname = "a"\nenv = "A"\nfile = "f"\nscope = "full"\n', "exactly one of env"),
        ('[[keys]]\nname = "a"\nenv = "A"\n', "'scope' is required"),
        ('[[keys]]\nname = "a"\nenv = "A"\nscope = "admin"\n', "scope 'admin' is not one of"),
        ('[[keys]]\nenv = "A"\nscope = "full"\n', "'name' is required"),
        ('[[keys]]\nname = "a"\nenv = "A"\nscope = "full"\nowner = "x"\n', "unknown field 'owner'"),
        (
            '[[keys]]\nname = "a"\nenv = "A"\nscope = "full"\nplaces = [{place = "x"}]\n',
            "'kind' is required",
        ),
        (
            '[[keys]]\nname = "a"\nenv = "A"\nscope = "full"\n'
            'places = [{place = "x", kind = "browser"}]\n',
            "kind 'browser' is not one of",
        ),
        (
            '[[keys]]\nname = "a"\nenv = "A"\nscope = "full"\nbase_url = "ftp://x"\n',
            "'base_url' must be an http",
        ),
        ('[[keys]]\nname = "a"\nenv = "A"\nscope = "full"\n' * 2, "the name is used twice"),
        ("keys = []\n", "'keys' must be a non-empty list"),
        ('tokens = "x"\nkeys = []\n', "unknown top-level field 'tokens'"),
        ('[[keys]\nname = "a"', "not valid TOML"),
    ],
)
def test_bad_inventories_fail_in_one_line_naming_file_and_entry(
    tmp_path: Path, body: str, problem: str
) -> None:
    path = write(tmp_path, "keys.toml", body)
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert problem in message
    assert SECRET not in message
    if 'name = "a"' in body and problem != "not valid TOML":
        assert "key 'a'" in message


def test_yaml_syntax_errors_do_not_quote_the_offending_line(tmp_path: Path) -> None:
    path = write(tmp_path, "keys.yaml", f"keys:\n  - name: a\n    env: [{SECRET}\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    assert "not valid YAML" in str(info.value) and "line" in str(info.value)
    assert SECRET not in str(info.value)


def test_inline_key_in_yaml_is_refused_without_echo(tmp_path: Path) -> None:
    body = f"keys:\n  - name: w\n    secret: {SECRET}\n    scope: full\n"
    path = write(tmp_path, "keys.yml", body)
    with pytest.raises(InventoryError, match="key 'w': the key must not be written") as info:
        load_inventory(path)
    assert SECRET not in str(info.value)


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="unknown inventory format"):
        load_inventory(write(tmp_path, "keys.json", "{}"))
    with pytest.raises(InventoryError, match="cannot read the inventory"):
        load_inventory(tmp_path / "absent.toml")


def test_the_documented_examples_load(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "audit.md").read_text()
    toml_example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    yaml_example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    toml_inv = load_inventory(write(tmp_path, "keys.toml", toml_example))
    assert [k.name for k in toml_inv.keys] == ["nightly-sync", "web-widget"]
    assert toml_inv.keys[1].flagged_places
    assert load_inventory(write(tmp_path, "keys.yaml", yaml_example)).keys[0].env == "WIDGET_KEY"
