-- Point a claimed idempotency key at the ask it created, for the window.
-- KEYS: [1] the key's hash.
-- ARGV: [1] fingerprint, [2] ask id, [3] window ms.
-- Returns 1 bound; 0 the key is not this request's.
if redis.call('HGET', KEYS[1], 'fp') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'ask', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
