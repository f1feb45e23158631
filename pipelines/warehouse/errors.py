"""The warehouse's own failure: its own module, so that what raises it (opening, the disk's
state) can be told apart without the modules importing each other in a circle."""

from __future__ import annotations


class WarehouseError(RuntimeError):
    """The warehouse file cannot be used; the message names the file and the cause."""
