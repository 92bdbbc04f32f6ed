-- A fragment (not a script): included where a claim ends the ask, to uncount its owner.
-- KEYS: [1] the ask's hash, [3] the pending-per-owner hash (absent on a cluster, where
--   index_release.lua follows).
local owner = KEYS[3] and redis.call('HGET', KEYS[1], 'owner')
if owner and redis.call('HINCRBY', KEYS[3], owner, -1) <= 0 then
  redis.call('HDEL', KEYS[3], owner)
end
