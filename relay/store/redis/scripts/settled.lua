-- Record that a message's final update landed. The unsettled zset holds each ended ask with
-- one unsettled until its claim may be taken (less the grace).
-- KEYS: [1] the ask's hash, [2] the unsettled zset (none on a cluster).
-- ARGV: [1] index ('' for every message), [2] ask id.
-- Returns 1 when the ask has ended (or is gone) with every message settled: it leaves the
-- zset; 0 otherwise.
-- include: unshown
if redis.call('EXISTS', KEYS[1]) == 0 then
  if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[2]) end
  return 1
end
redis.call('HSET', KEYS[1], ARGV[1] == '' and 'shown:all' or 'shown:' .. ARGV[1], '1')
if redis.call('HGET', KEYS[1], 'status') == 'pending' or #unshown(KEYS[1]) > 0 then return 0 end
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
