-- Note that an ended ask owes a receipt, unless it has one already.
-- KEYS: [1] the hash of ask id -> place in the chain, [2] the zset of asks owing a receipt.
-- ARGV: [1] ask id, [2] since when (epoch seconds).
-- Returns 1 noted (or noted before); 0 the ask has its receipt.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
return 1
