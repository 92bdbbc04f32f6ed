-- The posted questions of an ask whose message is not settled yet.
-- KEYS: [1] the ask's hash.
-- ARGV: none.
-- Returns the question indexes.
-- include: unshown
return unshown(KEYS[1])
