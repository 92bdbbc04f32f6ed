-- Claim an ask's due reminder for a while (a claimer that dies lets it fall due again).
-- KEYS: [1] the ask's hash.
-- ARGV: [1] now (epoch), [2] lease end (epoch).
-- Returns {reminders sent so far, lease end}; {-1, when it is due} when it is not due yet
-- (claimed by another replica first); {-1, ''} when the ask has ended or has no reminder left.
local at = redis.call('HGET', KEYS[1], 'remind_at')
if not at or redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return {-1, ''} end
if tonumber(at) > tonumber(ARGV[1]) then return {-1, at} end
redis.call('HSET', KEYS[1], 'remind_at', ARGV[2])
return {tonumber(redis.call('HGET', KEYS[1], 'reminded') or '0'), ARGV[2]}
