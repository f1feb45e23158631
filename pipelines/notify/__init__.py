"""Sending what creditlens has to say: a channel's URL read at the moment of sending, one message
through Apprise, the words every message shares, and the loop that sends the outbox.

Alerts and month close word their messages and queue them in the outbox
(pipelines/warehouse/outbox.py); both send them through here, which knows neither.
"""
