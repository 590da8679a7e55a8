"""The Lua scripts of the run bus: each check-and-write that must not interleave with another
instance's is one script, run atomically by Redis.

Fencing (docs/reference/api-server.md#run-bus): a run's record holds its ``owner``, an ``epoch``
and ``ended``. The owner writes only while the record still names it with the epoch it claimed
and the run has not ended; whoever ends a run (its owner, or a reaper once the owner is gone)
does so in one script that checks the same, so a run ends exactly once. ``reserved`` is the
highest seq the owner may have shown its own readers; a reaper numbers its terminal event after
it, so no seq ever means two events.

The bus clock (``hermes:bus:clock``: ``since``, ``beat``) says how long Redis has been up and
reachable without a break: a heartbeat more than ``gap`` seconds after the last one (Redis
restarted empty, was frozen, or nobody could reach it) starts it again, and nothing is reaped
until it has run for the grace period, so every live owner had time to heartbeat and announce
its runs again.
"""

from __future__ import annotations

# now: Redis's own clock, in seconds.
_NOW = """
local clock_now = redis.call('TIME')
local now = tonumber(clock_now[1]) + tonumber(clock_now[2]) / 1000000
"""

# steady(clock_key, grace, gap): the bus has been up without a break for at least ``grace``.
_STEADY = (
    _NOW
    + """
local function steady(clock, grace, gap)
  local since = tonumber(redis.call('HGET', clock, 'since') or '')
  local beat = tonumber(redis.call('HGET', clock, 'beat') or '')
  if not since or not beat then return false end
  return now - beat <= gap and now - since >= grace
end
"""
)

#: KEYS alive, instances, clock; ARGV me, ttl_ms, gap_s. Returns {added to instances, key existed}.
HEARTBEAT = (
    _NOW
    + """
local had = redis.call('EXISTS', KEYS[1])
redis.call('SET', KEYS[1], tostring(now), 'PX', ARGV[2])
local added = redis.call('SADD', KEYS[2], ARGV[1])
local since = tonumber(redis.call('HGET', KEYS[3], 'since') or '')
local beat = tonumber(redis.call('HGET', KEYS[3], 'beat') or '')
if not since or not beat or now - beat > tonumber(ARGV[3]) then since = now end
redis.call('HSET', KEYS[3], 'since', tostring(since), 'beat', tostring(now))
return {added, had}
"""
)

#: KEYS record, stream, open set; ARGV me, epoch, create, principal, session id, reserve, status,
#: end, retention_s, maxlen, record_ttl_s, run id, then seq/data pairs (the terminal one last
#: when ``end`` is "1"). Returns {"ok", refused} or {"missing"} or {"fenced", status}.
OWNER_WRITE = """
local rec = redis.call('HMGET', KEYS[1], 'owner', 'epoch', 'ended', 'status')
if not rec[1] then
  if ARGV[3] ~= '1' then return {'missing'} end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', ARGV[2], 'principal', ARGV[4],
             'session_id', ARGV[5], 'reserved', '0')
  redis.call('EXPIRE', KEYS[1], ARGV[11])
  redis.call('SADD', KEYS[3], ARGV[12])
elseif rec[1] ~= ARGV[1] or rec[2] ~= ARGV[2] or rec[3] == '1' then
  return {'fenced', rec[4] or ''}
end
local refused = 0
local last = #ARGV
for i = 13, last, 2 do
  local ok
  if ARGV[8] == '1' and i + 1 == last then
    ok = redis.pcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[10], ARGV[i] .. '-0', 'd', ARGV[i + 1], 't', '1')
  else
    ok = redis.pcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[10], ARGV[i] .. '-0', 'd', ARGV[i + 1])
  end
  if type(ok) == 'table' and ok.err then refused = refused + 1 end
end
if ARGV[6] ~= '' then
  local held = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0') or 0
  if tonumber(ARGV[6]) > held then redis.call('HSET', KEYS[1], 'reserved', ARGV[6]) end
end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'status', ARGV[7]) end
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'ended', '1')
  redis.call('EXPIRE', KEYS[2], ARGV[9])
  redis.call('SREM', KEYS[3], ARGV[12])
end
return {'ok', refused}
"""

#: KEYS record, stream, clock, the owner's alive key, the owner's open set; ARGV epoch, reserved,
#: seq, payload, status, retention_s, grace_s, gap_s, run id. Returns reaped, ended, changed,
#: alive, wait or missing.
REAP = (
    _STEADY
    + """
local rec = redis.call('HMGET', KEYS[1], 'owner', 'epoch', 'ended', 'reserved')
if not rec[1] then return 'missing' end
if rec[3] == '1' then return 'ended' end
if rec[2] ~= ARGV[1] or (rec[4] or '0') ~= ARGV[2] then return 'changed' end
if redis.call('EXISTS', KEYS[4]) == 1 then return 'alive' end
if not steady(KEYS[3], tonumber(ARGV[7]), tonumber(ARGV[8])) then return 'wait' end
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if top[1] and tonumber(string.match(top[1][1], '^(%d+)')) >= tonumber(ARGV[3]) then return 'changed' end
redis.call('XADD', KEYS[2], ARGV[3] .. '-0', 'd', ARGV[4], 't', '1')
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'ended', '1', 'epoch', tostring(tonumber(rec[2]) + 1))
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('SREM', KEYS[5], ARGV[9])
return 'reaped'
"""
)

#: A run the bus has no record of (Redis lost it) whose owner never announced it again: end it
#: with a record nobody owns, so a late owner's claim is refused. KEYS record, stream, clock;
#: ARGV principal, session id, seq, payload, status, retention_s, record_ttl_s, grace_s, gap_s.
#: Returns reaped, exists or wait.
REAP_UNKNOWN = (
    _STEADY
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if not steady(KEYS[3], tonumber(ARGV[8]), tonumber(ARGV[9])) then return 'wait' end
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if top[1] and tonumber(string.match(top[1][1], '^(%d+)')) >= tonumber(ARGV[3]) then return 'exists' end
redis.call('XADD', KEYS[2], ARGV[3] .. '-0', 'd', ARGV[4], 't', '1')
redis.call('HSET', KEYS[1], 'owner', '', 'epoch', '1', 'ended', '1', 'principal', ARGV[1],
           'session_id', ARGV[2], 'reserved', '0', 'status', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[7])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return 'reaped'
"""
)
