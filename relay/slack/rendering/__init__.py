"""What the relay shows in Slack, pure: Block Kit for a question and each way it ends,
texts within Slack's limits (``kit``, ``text``), notices, reminders and tallies."""
