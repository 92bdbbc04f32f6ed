-- Drop an idempotency key's claim whose create failed; only an unbound claim is dropped.
-- KEYS: [1] the key's hash.
-- ARGV: [1] fingerprint.
-- Returns 1 dropped; 0 not.
if redis.call('HGET', KEYS[1], 'fp') == ARGV[1] and redis.call('HGET', KEYS[1], 'ask') == '' then
  return redis.call('DEL', KEYS[1])
end
return 0
