"""Named crash points, for proving that a sync killed anywhere leaves nothing half-done.

Set CREDITLENS_FAILPOINT to a name below and the process SIGKILLs itself when it gets there
(no cleanup, no atexit: as if the machine lost power). Unset, this costs one dict lookup.

- ``fetch``: after the first ledger page was staged;
- ``transaction``: inside the landing transaction, after the inserts, before COMMIT;
- ``publish``: after the analyst copy's new file was written, before the rename;
- ``alert_sent``: after an alert's message was sent, before its outbox row records it;
- ``statement_close``: inside a close check's transaction, after its inserts, before COMMIT;
- ``statement_queued``: in the same transaction, after the closes' messages were queued.
"""

from __future__ import annotations

import os
import signal

NAMES = ("fetch", "transaction", "publish", "alert_sent", "statement_close", "statement_queued")

# Set in a worker process that reads ledger windows for a sync: a failpoint there kills the sync
# itself (its workers die with it), since the sync is what a power cut takes down.
_sync_pid: int | None = None


def kill_with_sync(pid: int) -> None:
    global _sync_pid
    _sync_pid = pid


def failpoint(name: str) -> None:
    if os.environ.get("CREDITLENS_FAILPOINT") == name:
        if _sync_pid is not None:
            os.kill(_sync_pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
