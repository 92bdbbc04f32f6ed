-- Note that an ask owes a receipt (once it ends), unless it has one already.
-- KEYS: [1] the hash of ask id -> place in the chain, [2] the zset of asks owing a receipt.
-- ARGV: [1] ask id, [2] since when (epoch seconds), [3] 'first' (a debt already noted keeps
-- its time) or 'again' (a still pending ask's debt goes back in line at ARGV[2]).
-- Returns 1 noted (or noted before); 0 the ask has its receipt.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
if ARGV[3] == 'again' then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
else
  redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
end
return 1
