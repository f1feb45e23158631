"""Whether a process still runs: how leftovers of killed syncs are told from live work."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True
