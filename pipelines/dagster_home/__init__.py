"""The Dagster instance creditlens records its runs in, shared by the CLI and `dagster dev`."""
