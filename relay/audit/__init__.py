"""The audit trail: an ask as the trail shows it, its filters, cursor and CSV export
(``trail``). Evidence, beside ``relay.receipts`` and ``relay.webhooks``."""
