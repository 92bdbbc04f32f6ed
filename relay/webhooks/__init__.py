"""Signed outcome webhooks: an ask's end (and chosen progress events) POSTed to its
``callback_url``, from an outbox in the store, with a timestamped HMAC signature."""

from relay.webhooks.policy import CallbackRefused, HostPolicy
from relay.webhooks.sender import Subscription, Webhooks, WebhookSettings
from relay.webhooks.signing import SIGNATURE_HEADER, sign, token_secret, verify_webhook

__all__ = [
    "SIGNATURE_HEADER",
    "CallbackRefused",
    "HostPolicy",
    "Subscription",
    "WebhookSettings",
    "Webhooks",
    "sign",
    "token_secret",
    "verify_webhook",
]
