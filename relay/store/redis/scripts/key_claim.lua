-- Claim an idempotency key (relay.store.idempotency): a free key is claimed (no ask yet) for
-- the lease; a held one is compared.
-- KEYS: [1] the key's hash.
-- ARGV: [1] the request's fingerprint, [2] lease ms.
-- Returns {'new', ''}, {'conflict', ''} or {'same', ask id or '' while in flight}.
local fp = redis.call('HGET', KEYS[1], 'fp')
if not fp then
  redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'ask', '')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'new', ''}
end
if fp ~= ARGV[1] then return {'conflict', ''} end
return {'same', redis.call('HGET', KEYS[1], 'ask') or ''}
