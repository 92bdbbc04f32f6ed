-- A fragment (not a script): unshown(key), the posted questions of the ask at hash `key`
-- whose final update has not landed. In the ask's hash, shown:{i} once question i's did
-- (shown:all: every one).
local function unshown(key)
  local out = {}
  if redis.call('HEXISTS', key, 'shown:all') == 1 then return out end
  local n = tonumber(redis.call('HGET', key, 'n') or '0')
  for i = 0, n - 1 do
    if redis.call('HEXISTS', key, 'msg:' .. i) == 1
      and redis.call('HEXISTS', key, 'shown:' .. i) == 0 then
      table.insert(out, i)
    end
  end
  return out
end
