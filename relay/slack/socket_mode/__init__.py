"""Slack's Socket Mode: the relay's connection, opened and kept open in the background."""
