"""Alerts that reach people: rules and channels of the accounts file, their evaluation against
the warehouse, their state (once per crossing) and their delivery through an outbox
(docs/alerts.md)."""
