-- Owe a webhook delivery; an event id seen before is not enqueued again.
-- KEYS: [1] the delivery hash, [2] the outbox zset, [3] the watch zset, [4] the subscription key.
-- ARGV: [1] event id, [2] delivery JSON, [3] due (epoch), [4] ask id, [5] final ('1' or '0':
--   a final event stops watching the ask).
-- Returns 1 enqueued; 0 known already.
if ARGV[5] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[4])
  redis.call('DEL', KEYS[4])
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'delivery', ARGV[2], 'attempts', 0, 'state', 'pending')
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
