-- Append a receipt to the chain if its head is still the one the receipt was signed after.
-- KEYS: [1] the chain list, [2] the hash of ask id -> place, [3] the head ('seq:digest'),
--   [4] the zset of asks owing a receipt (the append settles the ask's debt).
-- ARGV: [1] ask id, [2] the receipt (compact JWS), [3] its place (seq), [4] the previous
--   receipt's digest ('' for the first), [5] this receipt's digest.
-- KEYS[5]: the trimmed start ('seq:digest' of the last receipt dropped; absent: none).
-- Returns {'appended', ''}; {'exists', the ask's receipt}; {'moved', the head now}.
local base = tonumber(string.match(redis.call('GET', KEYS[5]) or '0:', '^(%d+):'))
local at = redis.call('HGET', KEYS[2], ARGV[1])
if at then
  redis.call('ZREM', KEYS[4], ARGV[1])
  return {'exists', redis.call('LINDEX', KEYS[1], tonumber(at) - 1 - base)}
end
local head = redis.call('GET', KEYS[3]) or '0:'
if head ~= (tonumber(ARGV[3]) - 1) .. ':' .. ARGV[4] then
  return {'moved', head}
end
if redis.call('LLEN', KEYS[1]) + base ~= tonumber(ARGV[3]) - 1 then
  return {'moved', head}
end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('SET', KEYS[3], ARGV[3] .. ':' .. ARGV[5])
redis.call('ZREM', KEYS[4], ARGV[1])
return {'appended', ''}
