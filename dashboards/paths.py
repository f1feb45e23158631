"""Where each page lives in the site, and file names that are safe whatever the id says.

Ids come from the API (agents, campaigns, channels) or from configuration (accounts): they may
hold slashes, dots, quotes or nothing readable at all. A file name is a readable slug plus a short
hash of the exact id, so two ids never share a file and no id can escape its directory.

An account's folder is the one exception a script relies on: it is the account's name itself when
that is already a safe slug (``acme``, ``north-2``), else its slug, two dashes and the short hash
(``Acme Corp`` -> ``acme-corp--e9832fd4``). Both are computed from the name alone, never from the
other accounts, so a script can guess the folder; a safe slug never holds ``--``, so a name never
lands on another name's hashed folder.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from datetime import date

ASSETS = "assets"
SITE_INDEX = "index.html"
KEY_AUDIT = "key-audit.html"
DIMENSION_DIRS = {"agent_id": "agents", "campaign_id": "campaigns", "channel": "channels"}


def safe_name(value: str, max_slug: int = 40) -> str:
    """``Winter renewals`` -> ``winter-renewals-3f9a1c2b``; never empty, never a path."""
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:max_slug].strip("-")
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=4).hexdigest()
    return f"{slug}-{digest}" if slug else f"id-{digest}"


# A name used as it is: lowercase ASCII letters and digits in runs joined by single dashes.
SAFE_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_ACCOUNT_SLUG = 40
# Names Windows refuses as a folder, whatever follows: a site copied there must still open.
_DEVICE_NAMES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)


def account_folder(account: str) -> str:
    """``acme`` -> ``acme``; ``Acme Corp`` -> ``acme-corp--e9832fd4``; ``日本`` -> ``id--…``."""
    plain = len(account) <= MAX_ACCOUNT_SLUG and SAFE_SLUG.fullmatch(account)
    if plain and account not in _DEVICE_NAMES:
        return account
    hashed = safe_name(account, MAX_ACCOUNT_SLUG)
    slug, digest = hashed.rsplit("-", 1)
    return f"{slug}--{digest}"


def account_dir(account: str) -> str:
    return f"accounts/{account_folder(account)}"


def overview(account: str) -> str:
    return f"{account_dir(account)}/index.html"


def account_status(account: str) -> str:
    """The page of an account whose sync fails or never ran (pages/account_status.py)."""
    return f"{account_dir(account)}/status.html"


def reconciliation(account: str) -> str:
    return f"{account_dir(account)}/reconciliation.html"


def statement(account: str, month: date, ext: str = "html") -> str:
    return f"{account_dir(account)}/statement-{month:%Y-%m}.{ext}"


def dimension_index(account: str, dimension: str) -> str:
    return f"{account_dir(account)}/{DIMENSION_DIRS[dimension]}/index.html"


def dimension_page(account: str, dimension: str, value: str) -> str:
    return f"{account_dir(account)}/{DIMENSION_DIRS[dimension]}/{safe_name(value)}.html"


def asset(name: str) -> str:
    return f"{ASSETS}/{name}"


def relative(from_page: str, to_path: str) -> str:
    """The href from one site path to another, so the site works from file:// and over http."""
    return posixpath.relpath(to_path, posixpath.dirname(from_page) or ".")
