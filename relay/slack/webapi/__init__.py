"""What goes out to Slack's Web API: the calls (``calls``), their retries and failures,
posting and updating an ask's messages, and the work kept off the agent's path."""
