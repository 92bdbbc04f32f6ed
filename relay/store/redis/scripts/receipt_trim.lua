-- Drop the receipts up to a place, keeping the digest of the last one dropped.
-- KEYS: [1] the chain list, [2] the hash of ask id -> place, [3] the trimmed start.
-- ARGV: [1] the trimmed start the caller read ('seq:digest' or '0:'), [2] the last place to
--   drop, [3] its receipt's digest, [4..] the ask ids of the receipts dropped.
-- Returns how many were dropped (0: another replica trimmed first).
local base = redis.call('GET', KEYS[3]) or '0:'
if base ~= ARGV[1] then return 0 end
local from = tonumber(string.match(base, '^(%d+):'))
local through = tonumber(ARGV[2])
local count = through - from
if count <= 0 or count > redis.call('LLEN', KEYS[1]) then return 0 end
redis.call('LTRIM', KEYS[1], count, -1)
for i = 4, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
redis.call('SET', KEYS[3], through .. ':' .. ARGV[3])
return count
