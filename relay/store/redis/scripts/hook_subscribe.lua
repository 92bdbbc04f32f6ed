-- Remember an ask's webhook subscription (relay.store.outbox), and watch the ask.
-- KEYS: [1] the subscription key, [2] the watch zset.
-- ARGV: [1] ask id, [2] subscription JSON, [3] ttl ms, [4] score (now, epoch).
-- Returns 1.
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
return 1
