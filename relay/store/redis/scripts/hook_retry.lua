-- Try a pending webhook delivery again later, counting this attempt.
-- KEYS: [1] the delivery hash, [2] the outbox zset.
-- ARGV: [1] event id, [2] due (epoch), [3] error.
-- Returns 1 rescheduled; 0 not pending.
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return 0 end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'error', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
