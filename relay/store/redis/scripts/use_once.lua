-- Use an approval's allow (relay.store.uses): the first use is recorded; the same use sent
-- again (its key) is that use, any other is refused.
-- KEYS: [1] the approval's use marker.
-- ARGV: [1] the use's key, [2] ms to keep the marker.
-- Returns 1 (the first use, or it again) or 0 (another use came first).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
