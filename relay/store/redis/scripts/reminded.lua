-- Record reminder number ARGV[1] as sent, and when the next one is due; only the first to
-- record it does.
-- KEYS: [1] the ask's hash.
-- ARGV: [1] reminders sent before this one, [2] next due (epoch; '' for none).
-- Returns 1 recorded; 0 recorded by another claimer first (or no such ask).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'reminded') or '0') ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'reminded', tonumber(ARGV[1]) + 1)
if ARGV[2] == '' or redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  redis.call('HDEL', KEYS[1], 'remind_at')
else
  redis.call('HSET', KEYS[1], 'remind_at', ARGV[2])
end
return 1
