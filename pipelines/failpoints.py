"""Named crash points, for proving that a sync killed anywhere leaves nothing half-done.

Set CREDITLENS_FAILPOINT to a name below and the process SIGKILLs itself when it gets there
(no cleanup, no atexit: as if the machine lost power). Unset, this costs one dict lookup.

- ``fetch``: after the first ledger page was staged;
- ``transaction``: inside the landing transaction, after the inserts, before COMMIT;
- ``publish``: after the analyst copy's new file was written, before the rename.
"""

from __future__ import annotations

import os
import signal

NAMES = ("fetch", "transaction", "publish")


def failpoint(name: str) -> None:
    if os.environ.get("CREDITLENS_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
