"""Helpers of the running process every layer may use: failpoints, process checks, progress
events, text made fit to show. They import nothing of creditlens."""
