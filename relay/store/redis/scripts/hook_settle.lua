-- End a webhook delivery (sent or failed), keeping its id so it is not enqueued again.
-- KEYS: [1] the delivery hash, [2] the outbox zset.
-- ARGV: [1] event id, [2] state, [3] error, [4] keep ms.
-- Returns 1 settled; 0 unknown.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'error', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
