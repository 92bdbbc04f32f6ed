"""``RedisStore``: asks shared by every replica, surviving restarts (the ``redis`` extra).

The store is composed of parts, one module each (see ``relay.store``): ``asks`` (creating
asks, claims, deadlines), ``waits`` (long-polls and pub/sub), ``idempotency``, ``listing``,
``outbox``, ``votes``, ``followups`` (reminders, unsettled messages), ``receipts`` and
``uses`` (an approval's allow used once);
``base`` holds what they share (the connection, ``_run``, the cluster's index upkeep) and
``codec`` the key names and record decoding. Every script is a file in ``scripts/`` whose
header names its keys and arguments.

Layout, for ask ``{id}`` (prefix ``relay:`` by default):

- ``relay:ask:{id}``, a hash: ``core`` (JSON of what never changes: request, target, owner,
  times), ``n`` (questions), ``status``, ``error``, ``finished_at``, ``msg:{i}`` (where
  question *i* was posted, as JSON ``[channel, ts]``) and ``ans:{i}`` (its answer), and the
  parts' fields (``vote:{i}``, ``remind_at``, ``reminded``, ``shown:{i}``). It expires
  ``retention`` seconds after the ask ends.
- ``relay:deadlines``, a sorted set of pending asks by deadline (``+inf`` for none).
- ``relay:done``, a pub/sub channel carrying the id of every ask that ends, so long-polls on
  any replica wake at once.
- ``relay:owners``, a hash counting each API token's (owner's) pending asks, so that
  ``max_pending_per_owner`` holds across replicas (checked and counted in the create script).
- ``relay:unsettled``, a sorted set of ended asks with a message whose final update has not
  landed (``shown:{i}`` in the ask's hash once it has), by when the sweep may claim each.
- ``relay:reminders``, ``relay:owned:{owner}``, ``relay:idem:…``, ``relay:ask:{id}:used`` and
  the outbox's keys: see ``followups``, ``listing``, ``idempotency``, ``uses`` and ``outbox``.

On a Redis Cluster (``redis+cluster://``) a script may touch one hash slot only, so the names
carry hash tags (``codec.Keys``): ``relay:ask:{id}`` keeps each ask's keys in its own slot,
and the structures across asks share the tag ``{relay:index}`` (``relay:{relay:index}:deadlines``,
``…:owners``, and ``…:ask-owners``, each pending ask's owner). A claim is then two scripts: the
claim on the ask's slot (which alone decides the outcome and publishes it), then the index
update on the index slot, which is idempotent and is run again by any later claim on the ask,
so a replica dying between the two leaves an index entry that the next ``due`` repairs. On one
Redis (and behind Sentinel) the names and the single atomic scripts stay as they were.

Every claim is one Lua script, so "first claim wins" holds across replicas; a per-question
``HSETNX`` makes two clicks on two replicas race safely. A Redis that cannot be reached raises
``StoreUnavailable``, never a raw ``redis`` exception. Off a cluster the hot path (claims,
creates, reading an ask) is pipelined on a connection of its own (``relay.store.redis_pipelined``).
"""

from __future__ import annotations

from relay.store.redis.asks import RedisAsks
from relay.store.redis.followups import RedisFollowUps
from relay.store.redis.idempotency import RedisIdempotency
from relay.store.redis.listing import RedisListing
from relay.store.redis.outbox import RedisOutbox
from relay.store.redis.receipts import RedisReceipts
from relay.store.redis.uses import RedisUses
from relay.store.redis.votes import RedisVotes
from relay.store.redis_connect import DEFAULT_MAX_CONNECTIONS

__all__ = ["DEFAULT_MAX_CONNECTIONS", "RedisStore"]


class RedisStore(
    RedisAsks,
    RedisVotes,
    RedisFollowUps,
    RedisIdempotency,
    RedisListing,
    RedisOutbox,
    RedisReceipts,
    RedisUses,
):
    """Asks in Redis, shared by every replica; claims are atomic Lua scripts.

    Every part of the store (``relay.store``) on Redis, composed: its methods are the parts'
    (``RedisAsks`` and the ``RedisWaits`` under it, ``RedisVotes``…), its constructor
    ``RedisBase``'s.
    """
