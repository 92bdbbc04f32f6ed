-- Claim a final outcome other than an answer (expired, cancelled…); the first claim wins.
-- KEYS: [1] the ask's hash, [2] the deadlines zset, [3] the pending-per-owner hash,
--   [4] the unsettled zset (on a cluster the ask's hash alone).
-- ARGV: [1] status, [2] error JSON, [3] finished_at, [4] ask id, [5] retention ms,
--   [6] the channel to publish the end on, [7] end time (epoch).
-- Returns {1 won or 0 lost, the ask's fields (HGETALL)}; {0} for an unknown ask.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {0} end
if status ~= 'pending' then return {0, redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'error', ARGV[2], 'finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
-- include: release_owner
-- Ended: index it as unsettled at its end time (on a cluster the client does).
if KEYS[4] then redis.call('ZADD', KEYS[4], 'NX', ARGV[7], ARGV[4]) end
return {1, redis.call('HGETALL', KEYS[1])}
