-- Keep a checkpoint if it covers more of the chain than the latest one kept: a later last
-- place, or the same one with receipts trimmed since.
-- KEYS: [1] the list of checkpoints, [2] what the latest one covers ('last:first').
-- ARGV: [1] the last place this one covers, [2] its first place, [3] the checkpoint.
-- Returns 1 kept; 0 the latest covers as much.
local latest = redis.call('GET', KEYS[2]) or '0:0'
local last, first = string.match(latest, '^(%d+):(%d+)$')
last, first = tonumber(last), tonumber(first)
local new_last, new_first = tonumber(ARGV[1]), tonumber(ARGV[2])
if new_last < last or (new_last == last and new_first <= first) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[2])
return 1
