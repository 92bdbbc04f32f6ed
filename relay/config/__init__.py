"""``relay serve``'s settings: read from the environment and flags (``settings``), one module
per concern (``mcp``, ``receipts``), the readers of each value (``values``), and process
tuning (``tuning``)."""
