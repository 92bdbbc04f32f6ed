"""Receipts: a signed, chained record of every ended ask, verifiable by anyone offline.

Each receipt is a JWS (RFC 7515, EdDSA over Ed25519, RFC 8037) over the RFC 8785 (JCS)
canonical JSON of what the ask showed and how it ended (``payload``); each names the digest
of the one before, so the relay's receipts form one chain (kept in the store,
``relay.store.receipts``). ``jcs`` and ``jws`` are written against their RFCs and checked
with the RFCs' examples; ``keys`` loads and publishes the keys; ``writer`` signs and appends
off the click's path; ``verify`` checks signatures and links.
"""

from relay.receipts.keys import PublicKeys, SigningKey, load_signing_key
from relay.receipts.writer import ReceiptWriter

__all__ = ["PublicKeys", "ReceiptWriter", "SigningKey", "load_signing_key"]
