"""Live rooms in Redis (issue 50): every replica behind nginx sees every room, and a lecturer's step
reaches the students waiting on any replica (a PUBLISH wakes their long polls; page/room.py).

Keys (prefix "vizvit:"): rooms (the set of open codes); room:{code} (the meta, JSON, as in
vizvit.classroom.roomstore); room:{code}:s (students, a set); room:{code}:sa (student -> the address it
joined from, a hash); room:{code}:a:{n} (step n's answers, a hash student -> text); room:{code}:b (blobs,
a hash name -> bytes); gone:{code} (a closed room's reason, expiring after TOMBSTONE_S). The writes that
check a rule run as Lua scripts: Redis runs a script alone, so two replicas answering at once can neither
lose nor double-count an answer, and a reveal can never fall between an answer's check and its write. A
meta change is a WATCH/MULTI transaction.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import redis

from vizvit.classroom.roomstore import TOMBSTONE_S, Created, Outcome, OwnerLimit, StoreDown

log = logging.getLogger(__name__)
P = "vizvit:"
CHANNEL = P + "rooms:changed"
MAX_CONNECTIONS = 64
STORE_DOWN = "The server's room store (Redis) is not answering: try again in a moment."

# ARGV: code, meta JSON, max_rooms, owners' busy share, owners' roomy share (roomstore.OwnerLimit: roomy
# while fewer than half the rooms are open). Owners are counted over the open rooms' metas (at most
# MAX_ROOMS of them), so the count can never drift from the rooms themselves.
_CREATE = """
local p = 'vizvit:'
local code = ARGV[1]
if redis.call('EXISTS', p..'room:'..code) == 1 or redis.call('EXISTS', p..'gone:'..code) == 1 then
  return 'taken'
end
local open = redis.call('SMEMBERS', p..'rooms')
if #open >= tonumber(ARGV[3]) then return 'full' end
local owner = cjson.decode(ARGV[2]).owner
if owner and owner ~= '' then
  local n = 0
  for _, c in ipairs(open) do
    local m = redis.call('GET', p..'room:'..c)
    if m and cjson.decode(m).owner == owner then n = n + 1 end
  end
  local share = tonumber(ARGV[4])
  if 2 * #open < tonumber(ARGV[3]) then share = tonumber(ARGV[5]) end
  if n >= share then return 'owner' end
end
redis.call('DEL', p..'room:'..code..':sa')  -- a close by an older replica leaves it
redis.call('SET', p..'room:'..code, ARGV[2])
redis.call('SADD', p..'rooms', code)
return 'ok'
"""

# ARGV: code, student, step (0: a registration, no step checked), text, max_students, addr, share.
# The same rule as vizvit.classroom.roomstore.check_answer (and unlimited: the owner, the hosts and the
# trusted lists; a JSON null decodes to cjson.null here, not nil, so every field is type-checked). An address's
# students are counted over the room's own student -> address hash (at most MAX_STUDENTS), so the count
# can never drift from the students themselves.
_ENTER = """
local p = 'vizvit:'
local code, student, step = ARGV[1], ARGV[2], tonumber(ARGV[3])
local m = redis.call('GET', p..'room:'..code)
if not m then return 'gone' end
local meta = cjson.decode(m)
if step > 0 then
  if step > meta.step then return 'ahead' end
  if step < meta.step then return 'closed' end
  for _, r in ipairs(meta.revealed) do if r == step then return 'closed' end end
end
local skey = p..'room:'..code..':s'
if redis.call('SISMEMBER', skey, student) == 0 then
  if meta.locked == true then return 'locked' end
  if redis.call('SCARD', skey) >= tonumber(ARGV[5]) then return 'full' end
  local addr = ARGV[6]
  if addr ~= '' then
    if type(meta.barred) == 'table' then
      for _, b in ipairs(meta.barred) do if b == addr then return 'barred' end end
    end
    local free = (type(meta.owner) == 'string' and meta.owner == addr)
    for _, name in ipairs({'hosts', 'trusted'}) do
      local list = meta[name]
      if type(list) == 'table' then
        for _, h in ipairs(list) do if h == addr then free = true end end
      end
    end
    if not free then
      local n = 0
      for _, a in ipairs(redis.call('HVALS', skey..'a')) do if a == addr then n = n + 1 end end
      if n >= tonumber(ARGV[7]) then return 'share' end
    end
  end
  redis.call('SADD', skey, student)
  redis.call('HSET', skey..'a', student, addr)
end
if step > 0 then redis.call('HSET', p..'room:'..code..':a:'..step, student, ARGV[4]) end
return 'ok'
"""

# ARGV: code, reason, tombstone seconds. -> 1 closed, 0 not open.
_CLOSE = """
local p = 'vizvit:'
local code = ARGV[1]
local m = redis.call('GET', p..'room:'..code)
if not m then return 0 end
local meta = cjson.decode(m)
for n = 1, #meta.questions do redis.call('DEL', p..'room:'..code..':a:'..n) end
redis.call('DEL', p..'room:'..code, p..'room:'..code..':s', p..'room:'..code..':sa', p..'room:'..code..':b')
redis.call('SREM', p..'rooms', code)
redis.call('SET', p..'gone:'..code, ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
"""

# ARGV: code, addr. -> how many students of addr were forgotten, with every answer they gave.
_REMOVE = """
local base = 'vizvit:room:'..ARGV[1]
local m = redis.call('GET', base)
if not m then return 0 end
local steps = #cjson.decode(m).questions
local all = redis.call('HGETALL', base..':sa')
local gone = 0
for i = 1, #all, 2 do
  if all[i + 1] == ARGV[2] then
    redis.call('SREM', base..':s', all[i])
    redis.call('HDEL', base..':sa', all[i])
    for n = 1, steps do redis.call('HDEL', base..':a:'..n, all[i]) end
    gone = gone + 1
  end
end
return gone
"""

Args = ParamSpec("Args")
R = TypeVar("R")


def _text(v: bytes | str) -> str:
    """A reply as text: redis-py types every reply ``bytes | str`` (str with decode_responses=True);
    this client keeps bytes, for the blobs."""
    return v.decode() if isinstance(v, bytes) else v


def _answers_down(fn: Callable[Args, R]) -> Callable[Args, R]:
    """Redis unreachable -> one plain sentence (a UserError), never a traceback; the server keeps serving."""

    @functools.wraps(fn)
    def call(*args: Args.args, **kwargs: Args.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except redis.RedisError as e:
            log.warning("room store: %s", e)
            raise StoreDown(STORE_DOWN) from None

    return call


class RedisStore:
    """vizvit.classroom.roomstore.RoomStore over one Redis server (url: redis://host:port/db)."""

    def __init__(self, url: str):
        self.url = url
        # A blocking pool: a burst of threads waits for a connection instead of failing ("Too many
        # connections"); 64 is more than the server's threads that call at once.
        pool = redis.BlockingConnectionPool.from_url(url, max_connections=MAX_CONNECTIONS, timeout=10,
                                                     socket_timeout=5, socket_connect_timeout=5,
                                                     health_check_interval=30)
        self.r = redis.Redis(connection_pool=pool)
        self._create, self._enter, self._close, self._remove = (self.r.register_script(s)
                                                                for s in (_CREATE, _ENTER, _CLOSE, _REMOVE))
        # Each message names its sender: this process's Rooms has woken its own pages already
        self.origin = secrets.token_hex(8)
        self._stop = threading.Event()

    @staticmethod
    def _key(code: str) -> str:
        return f"{P}room:{code}"

    @_answers_down
    def create(self, code: str, meta: dict, max_rooms: int, owners: OwnerLimit, now: float) -> Created:
        return self._create(args=[code, json.dumps(meta), max_rooms, owners.busy, owners.roomy]).decode()

    @_answers_down
    def meta(self, code: str) -> dict | None:
        raw = self.r.get(self._key(code))
        return json.loads(raw) if raw is not None else None

    @_answers_down
    def metas(self) -> dict[str, dict]:
        codes = sorted(_text(c) for c in self.r.smembers(P + "rooms"))
        raws = self.r.mget([self._key(c) for c in codes]) if codes else []
        return {c: json.loads(m) for c, m in zip(codes, raws) if m is not None}

    @_answers_down
    def version(self, code: str) -> int:
        raw = self.r.get(self._key(code))
        return int(json.loads(raw)["version"]) if raw is not None else -1

    @_answers_down
    def change(self, code: str, fn: Callable[[dict], bool]) -> dict | None:
        key = self._key(code)
        out: dict[str, Any] = {}

        def tx(pipe: redis.client.Pipeline) -> None:
            raw = pipe.get(key)
            if raw is None:
                out["meta"] = None
                return
            meta = json.loads(raw)
            bump = fn(meta)
            if bump:
                meta["version"] += 1
            pipe.multi()
            pipe.set(key, json.dumps(meta))
            out["meta"], out["bump"] = meta, bump

        self.r.transaction(tx, key)  # retried by redis-py while another writer changed the key meanwhile
        if out.get("bump"):
            self._announce(code)
        return out["meta"]

    @_answers_down
    def join(self, code: str, student: str, addr: str, max_students: int, share: int) -> Outcome:
        return self._enter(args=[code, student, 0, "", max_students, addr, share]).decode()

    @_answers_down
    def answer(self, code: str, student: str, step: int, text: str, addr: str, max_students: int,
               share: int) -> Outcome:
        return self._enter(args=[code, student, int(step), text, max_students, addr, share]).decode()

    @_answers_down
    def networks(self, code: str) -> dict[str, int]:
        return dict(Counter(_text(a) for a in self.r.hvals(f"{self._key(code)}:sa")))

    @_answers_down
    def remove_address(self, code: str, addr: str) -> int:
        return int(self._remove(args=[code, addr]))

    @_answers_down
    def answers(self, code: str, step: int) -> dict[str, str]:
        return {_text(k): _text(v) for k, v in self.r.hgetall(f"{self._key(code)}:a:{int(step)}").items()}

    @_answers_down
    def student_answers(self, code: str, student: str, steps: int) -> dict[int, str]:
        with self.r.pipeline(transaction=False) as pipe:  # one round trip for every step
            for n in range(1, int(steps) + 1):
                pipe.hget(f"{self._key(code)}:a:{n}", student)
            got = pipe.execute()
        return {n: _text(a) for n, a in enumerate(got, start=1) if a is not None}

    @_answers_down
    def joined(self, code: str) -> int:
        return int(self.r.scard(f"{self._key(code)}:s"))

    @_answers_down
    def put_blob(self, code: str, name: str, data: bytes) -> None:
        if self.r.exists(self._key(code)):  # a room closed meanwhile keeps nothing (its keys are gone)
            self.r.hset(f"{self._key(code)}:b", name, data)

    @_answers_down
    def blob(self, code: str, name: str) -> bytes | None:
        raw = self.r.hget(f"{self._key(code)}:b", name)
        return raw.encode() if isinstance(raw, str) else raw

    @_answers_down
    def blob_names(self, code: str) -> set[str]:
        return {_text(k) for k in self.r.hkeys(f"{self._key(code)}:b")}

    @_answers_down
    def close(self, code: str, reason: str, now: float) -> bool:
        closed = bool(self._close(args=[code, reason, int(TOMBSTONE_S)]))
        if closed:
            self._announce(code)
        return closed

    @_answers_down
    def gone(self, code: str, now: float) -> str | None:
        raw = self.r.get(f"{P}gone:{code}")
        return _text(raw) if raw is not None else None

    def _announce(self, code: str) -> None:
        self.r.publish(CHANNEL, f"{code} {self.origin}")

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """A daemon thread hears the other replicas' changes and calls callback(code); reconnects when
        Redis goes away (a waiting page meanwhile still re-reads the version every POLL_S)."""

        def listen() -> None:
            warned = False
            while not self._stop.is_set():
                try:
                    ps = self.r.pubsub(ignore_subscribe_messages=True)
                    ps.subscribe(CHANNEL)
                    warned = False
                    while not self._stop.is_set():
                        msg = ps.get_message(timeout=1.0)
                        if msg and msg.get("type") == "message":
                            code, _, origin = msg["data"].decode().partition(" ")
                            if origin != self.origin:
                                callback(code)
                    ps.close()
                except redis.RedisError as e:
                    if not warned:  # once per outage, not once a second
                        log.warning("room store: listening for changes: %s", e)
                        warned = True
                    self._stop.wait(1.0)

        threading.Thread(target=listen, name="vizvit-rooms-pubsub", daemon=True).start()

    def stop(self) -> None:
        """End the subscription's thread (tests; a server's ends with its process)."""
        self._stop.set()
