-- Lease what is due in a zset of due times (the webhook outbox, the unsettled asks): each due
-- member's time moves to the end of the lease, so no other replica takes it meanwhile, and
-- one whose claimer died falls due again after it.
-- KEYS: [1] the zset.
-- ARGV: [1] due by, [2] lease until, [3] limit.
-- Returns the members leased.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id)
end
return ids
