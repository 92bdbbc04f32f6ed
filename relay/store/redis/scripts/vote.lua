-- Count one person's vote on question ARGV[1] at version ARGV[13], or (ARGV[14] = '1') make
-- an edited call version ARGV[13] of it, counted as its editor's vote. Votes live in the ask's
-- hash (vote:{i}, a JSON list; ver:{i} the current version, 1 when absent; rev:{i} its edit's
-- custom text), so they expire with it. Only votes on the current version count; the vote
-- that reaches the quorum (or names a veto label) claims ans:{i} with every vote in it, as
-- answer.lua would, and completes the ask on the last question.
-- KEYS: [1] the ask's hash, [2] the deadlines zset, [3] the pending-per-owner hash,
--   [4] the unsettled zset (on a cluster the ask's hash alone, as for answer.lua).
-- ARGV: [1] index, [2] voter id, [3] vote JSON, [4] votes required, [5] veto labels JSON,
--   [6] label, [7] answer item JSON (without its votes), [8] finished_at, [9] ask id,
--   [10] retention ms, [11] the channel to publish the end on, [12] end time (epoch),
--   [13] version, [14] '1' to revise, [15] the edit's custom text (when revising).
-- Returns {outcome, the ask's fields (HGETALL), the question's votes JSON, its edit or ''};
-- outcome is counted, decided, completed, already_voted, already_answered, stale_version,
-- not_pending, unknown or bad_index.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
local index = tonumber(ARGV[1])
if index < 0 or index >= n then return {'bad_index'} end
local field = 'vote:' .. ARGV[1]
local raw = redis.call('HGET', KEYS[1], field) or '[]'
local rev = redis.call('HGET', KEYS[1], 'rev:' .. ARGV[1]) or ''
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  return {'not_pending', redis.call('HGETALL', KEYS[1]), raw, rev}
end
if redis.call('HEXISTS', KEYS[1], 'ans:' .. ARGV[1]) == 1 then
  return {'already_answered', redis.call('HGETALL', KEYS[1]), raw, rev}
end
local current = tonumber(redis.call('HGET', KEYS[1], 'ver:' .. ARGV[1]) or '1')
local version = tonumber(ARGV[13])
local revise = ARGV[14] == '1'
if (revise and version ~= current + 1) or (not revise and version ~= current) then
  return {'stale_version', redis.call('HGETALL', KEYS[1]), raw, rev}
end
local votes = cjson.decode(raw)
for _, v in ipairs(votes) do
  if v['by']['id'] == ARGV[2] and (v['version'] or 1) == version then
    return {'already_voted', redis.call('HGETALL', KEYS[1]), raw, rev}
  end
end
if revise then
  rev = ARGV[15]
  redis.call('HSET', KEYS[1], 'ver:' .. ARGV[1], version, 'rev:' .. ARGV[1], rev)
end
table.insert(votes, cjson.decode(ARGV[3]))
raw = cjson.encode(votes)
redis.call('HSET', KEYS[1], field, raw)
local count = 0
for _, v in ipairs(votes) do
  if v['label'] == ARGV[6] and (v['version'] or 1) == version then count = count + 1 end
end
local veto = false
for _, label in ipairs(cjson.decode(ARGV[5])) do
  if label == ARGV[6] then veto = true end
end
if not veto and count < tonumber(ARGV[4]) then
  return {'counted', redis.call('HGETALL', KEYS[1]), raw, rev}
end
local item = cjson.decode(ARGV[7])
item['votes'] = votes
redis.call('HSET', KEYS[1], 'ans:' .. ARGV[1], cjson.encode(item))
for i = 0, n - 1 do
  if redis.call('HEXISTS', KEYS[1], 'ans:' .. i) == 0 then
    return {'decided', redis.call('HGETALL', KEYS[1]), raw, rev}
  end
end
redis.call('HSET', KEYS[1], 'status', 'answered', 'finished_at', ARGV[8])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[9]) end
redis.call('PEXPIRE', KEYS[1], ARGV[10])
redis.call('PUBLISH', ARGV[11], ARGV[9])
-- include: release_owner
-- Ended: index it as unsettled at its end time (on a cluster the client does).
if KEYS[4] then redis.call('ZADD', KEYS[4], 'NX', ARGV[12], ARGV[9]) end
return {'completed', redis.call('HGETALL', KEYS[1]), raw, rev}
