"""The Dagster wiring every domain shares: automation, known failures as one line, asset
metadata, schedules, and the fan-out over accounts with its outcomes."""
