-- Receipts by place, reading the trimmed start in the same step (a trim moves indexes).
-- KEYS: [1] the chain list, [2] the hash of ask id -> place, [3] the trimmed start.
-- ARGV: [1] an ask id ('' to read by place), [2] the first place, [3] how many.
-- Returns the ask's receipt (a list of at most one), or the receipts from that place.
local base = tonumber(string.match(redis.call('GET', KEYS[3]) or '0:', '^(%d+):'))
local first = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
if ARGV[1] ~= '' then
  local at = redis.call('HGET', KEYS[2], ARGV[1])
  if not at then return {} end
  first = tonumber(at)
  count = 1
end
if count <= 0 then return {} end
local index = first - 1 - base
if index < 0 then
  count = count + index
  index = 0
end
if count <= 0 then return {} end
return redis.call('LRANGE', KEYS[1], index, index + count - 1)
