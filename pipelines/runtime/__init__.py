"""Helpers of the running process every layer may use: failpoints, process checks, progress
events, text made fit to show, start-up imports loaded without the garbage collector, the exit
without teardown. They import nothing of creditlens."""
