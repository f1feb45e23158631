"""Month close: each account's monthly statement frozen once its month is over, restated (never
rewritten) when the past changes, and delivered to finance once per close or restatement."""
