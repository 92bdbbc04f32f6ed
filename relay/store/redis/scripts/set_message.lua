-- Record where question ARGV[1]'s Slack message was posted.
-- KEYS: [1] the ask's hash.
-- ARGV: [1] index, [2] message JSON [channel, ts].
-- Returns the ask as it stands after (HGETALL); 0 no such ask; -1 no such question.
local n = redis.call('HGET', KEYS[1], 'n')
if not n then return 0 end
local index = tonumber(ARGV[1])
if index < 0 or index >= tonumber(n) then return -1 end
redis.call('HSET', KEYS[1], 'msg:' .. ARGV[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
