-- Claim question ARGV[1]'s answer; the last question's completes the ask.
-- KEYS: [1] the ask's hash, [2] the deadlines zset, [3] the pending-per-owner hash,
--   [4] the unsettled zset (on a cluster the ask's hash alone).
-- ARGV: [1] index, [2] item JSON, [3] finished_at, [4] ask id, [5] retention ms,
--   [6] the channel to publish the end on, [7] end time (epoch), [8] '1' if the caller holds
--   the ask's core (the reply then carries it empty: it never changes), [9] for a click
--   (claim_click) the click's message as JSON [channel, ts]: a question posted to another
--   message is refused first.
-- Returns {outcome, the ask's fields (HGETALL, with the writes applied)}; outcome is
-- accepted, completed, already_answered, not_pending, unknown, bad_index or message_mismatch.
-- The ask is read once (HGETALL: the checks are made on that copy) and written once: every
-- command a script runs costs Redis several microseconds more when its caches are cold, as
-- they are for a click that comes between other work (13 -> 7 commands on a one-question
-- ask; see BENCHMARKS.md, tenth pass). The client reads the reply's fields by name.
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then return {'unknown'} end
local at = {}
for i = 1, #all, 2 do at[all[i]] = i + 1 end
local n = tonumber(all[at['n']])
local index = tonumber(ARGV[1])
if index < 0 or index >= n then return {'bad_index'} end
local function state()
  if ARGV[8] == '1' and at['core'] then all[at['core']] = '' end
  return all
end
if ARGV[9] then
  local posted = at['msg:' .. ARGV[1]]
  if posted then
    local was, click = cjson.decode(all[posted]), cjson.decode(ARGV[9])
    if was[1] ~= click[1] or was[2] ~= click[2] then return {'message_mismatch'} end
  end
end
if all[at['status']] ~= 'pending' then return {'not_pending', state()} end
local field = 'ans:' .. ARGV[1]
if at[field] then return {'already_answered', state()} end
local function put(name, value)
  if at[name] then all[at[name]] = value else
    all[#all + 1] = name; all[#all + 1] = value; at[name] = #all
  end
end
put(field, ARGV[2])
for i = 0, n - 1 do
  if not at['ans:' .. i] then
    redis.call('HSET', KEYS[1], field, ARGV[2])
    return {'accepted', state()}
  end
end
redis.call('HSET', KEYS[1], field, ARGV[2], 'status', 'answered', 'finished_at', ARGV[3])
put('status', 'answered')
put('finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
-- include: release_owner
-- Ended: index it as unsettled at its end time (on a cluster the client does).
if KEYS[4] then redis.call('ZADD', KEYS[4], 'NX', ARGV[7], ARGV[4]) end
return {'completed', state()}
