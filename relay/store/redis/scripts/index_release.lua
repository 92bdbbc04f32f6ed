-- Redis Cluster only, on the index slot: the ask is no longer pending. Idempotent.
-- KEYS: [1] the deadlines zset, [2] the pending-per-owner hash, [3] each pending ask's owner.
-- ARGV: [1] ask id.
-- Returns 1 released; 0 not indexed.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local owner = redis.call('HGET', KEYS[3], ARGV[1])
if owner then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HINCRBY', KEYS[2], owner, -1) <= 0 then redis.call('HDEL', KEYS[2], owner) end
end
return 1
