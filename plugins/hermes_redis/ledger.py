"""The budget ledger on Redis (docs/reference/budgets.md#where-the-buckets-live): one Lua script
checks every bucket of a call and then changes them all, atomically, on Redis's own clock.

A bucket is one JSON string under ``hermes:budget:<bucket>`` with the fields
``hermes_core.budget_ledger`` keeps (``spent``, ``res``, ``w``, ``wt``, ``wr``, ``runs``); the
script follows the same rule as that module's ``check`` and ``change``. Redis configured but not
answering is ``BudgetUnavailable``: budgets fail closed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hermes_core import BucketLimits, BudgetUnavailable, LedgerCall, Verdict
from hermes_redis.script_link import LinkDown, ScriptRefused, bulk, link_for

PREFIX = "hermes:budget:"
NO_ANSWER = "Redis is configured for budgets but does not answer"
#: Arguments per bucket: its name and its four limits.
_PER_BUCKET = 5

#: KEYS: the buckets. ARGV: op, run id, reservation id, usd, tokens, ttl_s, then per bucket its
#: name and four limits (-1: none). Returns {"ok"} or {"no", bucket, limit, retry_after}.
APPLY = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local op, run, res = ARGV[1], ARGV[2], ARGV[3]
local usd, tok, ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local EPS = 1e-9
local function load(key)
  local raw = redis.call('GET', key)
  local s = {}
  if raw then s = cjson.decode(raw) end
  s.spent = tonumber(s.spent or 0)
  local live = {}
  if type(s.res) == 'table' then
    for k, v in pairs(s.res) do if tonumber(v[3]) > now then live[k] = v end end
  end
  s.res = live
  local slots = {}
  if type(s.runs) == 'table' then
    for k, v in pairs(s.runs) do if tonumber(v) > now then slots[k] = v end end
  end
  s.runs = slots
  local w = math.floor(now / 60)
  if tonumber(s.w) ~= w then s.w = w; s.wt = 0; s.wr = 0 end
  return s
end
local function limit(i, n)
  local v = tonumber(ARGV[6 + (i - 1) * 5 + 1 + n])
  if v < 0 then return nil end
  return v
end
local function check(s, i)
  local name = ARGV[6 + (i - 1) * 5 + 1]
  local spend, tpm, rpm, cr = limit(i, 1), limit(i, 2), limit(i, 3), limit(i, 4)
  local held_usd, held_tok = 0, 0
  for _, v in pairs(s.res) do
    held_usd = held_usd + tonumber(v[1]); held_tok = held_tok + tonumber(v[2])
  end
  local wait_window = math.max(1, (s.w + 1) * 60 - now)
  -- '1' when no call of any size fits: the settled spend or the minute's settled tokens are used up
  local spent_up, tokens_up = '0', '0'
  if spend and s.spent >= spend - EPS then spent_up = '1' end
  if tpm and s.wt >= tpm then tokens_up = '1' end
  local function spend_wait(fits)
    if held_usd > 0 and fits then return 1 end
    return 3600
  end
  if op == 'admit' then
    if spend and s.spent + held_usd >= spend - EPS then
      return {'no', name, 'spend_usd', tostring(spend_wait(s.spent < spend)), spent_up}
    end
    if tpm and s.wt + held_tok >= tpm then
      return {'no', name, 'tokens_per_minute', tostring(wait_window), tokens_up}
    end
    if rpm and s.wr + 1 > rpm then return {'no', name, 'requests_per_minute', tostring(wait_window)} end
    if cr and not s.runs[run] then
      local n = 0
      for _ in pairs(s.runs) do n = n + 1 end
      if n + 1 > cr then return {'no', name, 'concurrent_runs', '1'} end
    end
  elseif op == 'reserve' then
    if spend and s.spent + held_usd + usd > spend + EPS then
      return {'no', name, 'spend_usd', tostring(spend_wait(s.spent + usd <= spend)), spent_up}
    end
    if tpm and s.wt + held_tok + tok > tpm then
      return {'no', name, 'tokens_per_minute', tostring(wait_window), tokens_up}
    end
  end
  return nil
end
local states = {}
for i, key in ipairs(KEYS) do
  states[i] = load(key)
  local refused = check(states[i], i)
  if refused then return refused end
end
for i, key in ipairs(KEYS) do
  local s = states[i]
  if op == 'admit' then
    s.wr = s.wr + 1; s.runs[run] = now + ttl
  elseif op == 'reserve' then
    s.res[res] = {usd, tok, now + ttl}
    if s.runs[run] then s.runs[run] = now + ttl end
  elseif op == 'settle' then
    s.res[res] = nil; s.spent = s.spent + usd; s.wt = s.wt + tok
  elseif op == 'release' then
    s.runs[run] = nil
  end
  redis.call('SET', key, cjson.encode(s))
end
return {'ok'}
"""


class RedisLedger:
    """Budget buckets on one Redis server.

    :param url: the server (the run bus's ``bus.url``).
    :param connect_timeout_s: how long connecting may take. :param reply_timeout_s: how long
        an answer may take. Both bounded: an unreachable server refuses quickly (fail closed),
        never hangs a turn.
    :param own_link: run the script on the ledger's own connection (False: through redis-py's
        client, as for a ``rediss://`` URL).
    """

    name = "redis"

    def __init__(
        self, url: str, *, connect_timeout_s: float = 2.0, reply_timeout_s: float = 5.0, own_link: bool = True
    ) -> None:
        import redis.asyncio as aioredis

        self.url = url
        timeouts = {"connect_timeout_s": connect_timeout_s, "reply_timeout_s": reply_timeout_s}
        self.client: Any = aioredis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=connect_timeout_s,
            socket_timeout=reply_timeout_s,
        )
        #: The script's own pipelined connection (docs/reference/budgets.md#cost); None for a URL
        #: it does not speak (``rediss://``), where redis-py runs the script.
        self._link = link_for(url, APPLY, **timeouts) if own_link else None
        self._script: Any = self.client.register_script(APPLY) if self._link is None else None
        #: Each bucket's key and its name and limits, as RESP bulk strings encoded once.
        self._encoded: dict[BucketLimits, tuple[bytes, bytes]] = {}

    def _bucket(self, limits: BucketLimits) -> tuple[bytes, bytes]:
        encoded = self._encoded.get(limits)
        if encoded is None:
            if len(self._encoded) >= 10_000:
                self._encoded.clear()
            values = [limits.key, *(repr(v) for v in limits.as_list())]
            encoded = (bulk(PREFIX + limits.key), b"".join(bulk(v) for v in values))
            self._encoded[limits] = encoded
        return encoded

    async def apply(self, buckets: Sequence[BucketLimits], call: LedgerCall) -> Verdict:
        """Run the script over every bucket at once."""
        head = (call.op, call.run_id, call.res_id, repr(call.usd), str(call.tokens), repr(call.ttl_s))
        if self._link is None:
            reply = await self._via_redis_py(buckets, head)
        else:
            encoded = [self._bucket(b) for b in buckets]
            args = b"".join([*(bulk(v) for v in head), *(e[1] for e in encoded)])
            nargs = len(head) + _PER_BUCKET * len(encoded)
            try:
                reply = await self._link.call([e[0] for e in encoded], args, nargs)
            except (LinkDown, ScriptRefused) as exc:
                raise BudgetUnavailable(f"{NO_ANSWER}: {exc}") from exc
        if reply[0] == "ok":
            return Verdict(True)
        exhausted = len(reply) > 4 and reply[4] == "1"
        return Verdict(False, str(reply[1]), reply[2], float(reply[3]), exhausted)

    async def _via_redis_py(self, buckets: Sequence[BucketLimits], head: tuple[str, ...]) -> Any:
        import redis.exceptions

        args: list[Any] = list(head)
        for limits in buckets:
            args += [limits.key, *(repr(v) for v in limits.as_list())]
        try:
            return await self._script(keys=[PREFIX + b.key for b in buckets], args=args)
        except (redis.exceptions.RedisError, OSError) as exc:
            raise BudgetUnavailable(f"{NO_ANSWER}: {exc}") from exc

    async def read(self, bucket: str) -> dict[str, Any]:
        """Return a bucket's stored state (``{}`` when never charged)."""
        raw = await self.client.get(PREFIX + bucket)
        state: dict[str, Any] = json.loads(raw) if raw else {}
        return state

    async def aclose(self) -> None:
        """Close the connections."""
        if self._link is not None:
            await self._link.aclose()
        await self.client.aclose()
