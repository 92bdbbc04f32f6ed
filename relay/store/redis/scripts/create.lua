-- Create a pending ask: every field in one step, nothing half-written.
-- KEYS: [1] the ask's hash, [2] the deadlines zset, [3] the pending-per-owner hash,
--   [4] the unsettled zset (unused here), [5] the owner's audit index (with an owner).
--   On a cluster KEYS is the ask's hash alone: index_add.lua has checked and counted the
--   owner first, and the audit index (a slot of its own) is the client's to update.
-- ARGV: [1] score (the deadline), [2] ask id, [3] core JSON, [4] owner ('' for none),
--   [5] the owner's pending limit (0: none), [6] created (epoch), [7] the ask keys' prefix,
--   [8] how many of the audit index's oldest to check, [9...] field/value pairs.
-- Returns 1 created; 2 the same ask created before (a retried command: a no-op); 0 another
-- ask's id; -1 the owner is at their limit (nothing written). The audit index gets the ask,
-- and loses those of its oldest that expired: checking two per create, more leave than come,
-- so it stays about as long as retention keeps asks.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'core') == ARGV[3] then return 2 end
  return 0
end
if ARGV[4] ~= '' then
  if KEYS[3] then
    local limit = tonumber(ARGV[5])
    if limit > 0 and tonumber(redis.call('HGET', KEYS[3], ARGV[4]) or '0') >= limit then
      return -1
    end
    redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[4])
end
redis.call('HSET', KEYS[1], 'core', ARGV[3], unpack(ARGV, 9))
if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
if KEYS[5] then
  redis.call('ZADD', KEYS[5], ARGV[6], ARGV[2])
  for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, tonumber(ARGV[8]) - 1)) do
    if redis.call('EXISTS', ARGV[7] .. id) == 0 then redis.call('ZREM', KEYS[5], id) end
  end
end
return 1
