"""The warehouse's own failure: its own module, so that what raises it (opening, the disk's
state) can be told apart without the modules importing each other in a circle."""

from __future__ import annotations


class WarehouseError(RuntimeError):
    """The warehouse file cannot be used; the message names the file and the cause."""


def cannot_open(where: str, cause: Exception) -> WarehouseError:
    """The one line for a warehouse that would not open: ``where`` as messages show it (the file,
    or the lake's location), then DuckDB's own reason."""
    return WarehouseError(f"cannot open the warehouse {where}: {cause}")
