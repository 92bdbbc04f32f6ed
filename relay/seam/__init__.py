"""The interaction seam: the request and answer types and their wire form (read strictly:
``wire_reader``, ``safejson``, a relay's replies), cancellation (``abort``), the provider
``Protocol`` (``service``), the model-facing tool and plan review.

Pure and channel-free: every other package builds on it; it imports only ``relay.errors``.
Users import the public names from ``relay``.
"""
