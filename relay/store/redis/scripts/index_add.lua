-- Redis Cluster only, on the index slot: index and count a pending ask before it is written.
-- KEYS: [1] the deadlines zset, [2] the pending-per-owner hash, [3] each pending ask's owner.
-- ARGV: [1] score, [2] ask id, [3] owner ('' for none), [4] the owner's pending limit (0: none).
-- Returns 2 indexed already (nothing counted twice); -1 the owner at their limit; 1 added.
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 2 end
if ARGV[3] ~= '' then
  local limit = tonumber(ARGV[4])
  if limit > 0 and tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0') >= limit then
    return -1
  end
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1
