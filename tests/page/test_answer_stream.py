"""page/web/answer_stream.js, run in node as the page runs it (web.page_head's text) over a fetch
that plays Gradio's server: an event joined while its session's stream is being closed is still
answered on the stream Gradio's client reads. The server's messages are written by hand, in the
exact form Gradio 6.31 sends (orjson, `data: ...` and a blank line)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from page import web
from page.stream_grace import REOPENS_HEADER

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# stdin: {"streams": [[message, ...], ...] (each /queue/data answer in turn; a 404 once none is
# left), "joined": ids joined before the stream opens, "then": {n: [id, wait]}: after the reader's
# nth message (0-based) the page joins event id, before reading on (wait) or 200 ms later while the
# reader waits, "expect": messages to read, "limit_ms", "pieces": the sizes in bytes the stream's bytes
# come in, in turn (none: a message a piece)}; a message "cut" breaks its stream's connection. Prints
# what the reader got and the requests made.
NODE = r"""
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
globalThis.window = globalThis;
globalThis.location = new URL('http://x/');
const calls = [];
const sse = (messages) => new ReadableStream({ start(c) {
  const bytes = [];
  const send = () => {  // as the network cuts them: input.pieces' sizes in turn, or a message a piece
    const all = Buffer.concat(bytes.splice(0));
    for (let at = 0, k = 0; at < all.length; k++) {
      const n = input.pieces.length ? input.pieces[k % input.pieces.length] : all.length;
      c.enqueue(new Uint8Array(all.subarray(at, at + n)));
      at += n;
    }
  };
  for (const m of messages) {
    if (m === 'cut') { send(); setTimeout(() => c.error(new Error('cut')), 100); return; }  // lost, after what was sent
    bytes.push(Buffer.from('data: ' + JSON.stringify(m) + '\n\n'));
    if (!input.pieces.length) send();
  }
  send();
  c.close(); } });
const streams = input.streams.slice();
globalThis.fetch = async (req, init) => {
  const r = req instanceof Request ? req : new Request(req, init);
  calls.push({ url: r.url, reopens: r.headers.get(HEADER) });
  if (r.url.includes('/queue/join')) {
    const body = await r.json();
    return new Response(JSON.stringify({ event_id: body.id }), { headers: { 'content-type': 'application/json' } });
  }
  const next = streams.shift();
  if (!next) return new Response('no session', { status: 404 });
  return new Response(sse(next), { headers: { 'content-type': 'text/event-stream' } });
};
eval(HEAD);
const join = (id) => fetch('http://x/gradio_api/queue/join',
  { method: 'POST', body: JSON.stringify({ id, session_hash: 's' }) });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  for (const id of input.joined) await join(id);
  const res = await fetch(new Request('http://x/gradio_api/queue/data?session_hash=s'));
  const reader = res.body.getReader();
  const got = [];
  let text = '';
  const read = async () => {
    while (got.length < input.expect) {
      let chunk;
      try { chunk = await reader.read(); } catch (e) { got.push('error: ' + e.message); return; }
      if (chunk.done) { got.push('end'); return; }
      text += new TextDecoder().decode(chunk.value);
      let cut;
      while ((cut = text.indexOf('\n\n')) >= 0) {
        const m = JSON.parse(text.slice(6, cut));
        text = text.slice(cut + 2);
        got.push(m.msg + (m.event_id ? ' ' + m.event_id : '') + (m.output?.text ? ' ' + m.output.text : ''));
        const then = input.then[got.length - 1];
        if (then && then[1]) await join(then[0]);
        else if (then) setTimeout(() => join(then[0]), 200);
      }
    }
  };
  await Promise.race([read(), sleep(input.limit_ms)]);
  await sleep(300);  // anything asked for after the last message expected
  // written whole before the exit (a pipe is written asynchronously)
  process.stdout.write(JSON.stringify({ got, calls, streams: window.__vizvitAnswers.streams }), () => process.exit(0));
})();
"""


def completed(event: str) -> dict:
    return {"msg": "process_completed", "event_id": event, "output": {"data": [1]}, "success": True}


CLOSE = {"msg": "close_stream", "event_id": None}
HEARTBEAT = {"msg": "heartbeat", "event_id": None}


def script() -> str:
    """The answer stream's function as the page's head runs it."""
    head = web.page_head()
    body = re.search(r"<script>\n(.*?)\nwindow\.", head, re.S)
    assert body, "page_head no longer starts with the answer stream"
    return body.group(1)


def run(streams: list, joined: list[str], then: dict[int, tuple[str, bool]], expect: int, limit_ms: int = 1500,
        pieces: tuple[int, ...] = ()) -> dict:
    """The reader stops after `expect` messages or limit_ms (the stream Gradio reads never ends)."""
    node = NODE.replace("HEADER", json.dumps(REOPENS_HEADER)).replace("eval(HEAD)", f"eval({json.dumps(script())})")
    data = {"streams": streams, "joined": joined, "then": {str(k): v for k, v in then.items()}, "expect": expect,
            "limit_ms": limit_ms, "pieces": list(pieces)}
    done = subprocess.run(["node", "-e", node], input=json.dumps(data), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def data_calls(out: dict) -> list[dict]:
    return [c for c in out["calls"] if "/queue/data" in c["url"]]


def test_an_event_joined_as_the_stream_closes_is_answered_on_a_stream_asked_again():
    # The server answered A and closed (it had not heard of B); the page had joined B in between,
    # and Gradio's client, its stream still open, would open none: B's answer still comes to it.
    out = run([[completed("A"), CLOSE], [completed("B"), CLOSE]], ["A"], {0: ("B", True)}, expect=2)
    assert out["got"] == ["process_completed A", "process_completed B"]
    assert len(data_calls(out)) == 2 and out["streams"] == 1
    assert all(c["reopens"] == "1" for c in data_calls(out)), "the server would hold these streams' close"


def test_an_event_joined_later_wakes_the_stream_that_waits():
    out = run([[completed("A"), CLOSE], [completed("B"), CLOSE]], ["A"], {0: ("B", False)}, expect=2)
    assert out["got"] == ["process_completed A", "process_completed B"] and out["streams"] == 1


def test_nothing_owed_asks_for_nothing():
    out = run([[completed("A"), CLOSE], [completed("never")]], ["A"], {}, expect=2)
    assert out["got"] == ["process_completed A"]  # the close is not Gradio's: it would shut its stream
    assert len(data_calls(out)) == 1 and out["streams"] == 0


def test_an_answer_that_beats_its_join_is_not_owed_after():
    # B, a quick event, is answered on the open stream before its join's own answer is read: B is
    # not owed once its join is noted, so no stream is asked for it (one would never close).
    out = run([[completed("A"), completed("B"), CLOSE], [HEARTBEAT]], ["A"], {1: ("B", True)}, expect=3)
    assert out["got"] == ["process_completed A", "process_completed B"]
    assert len(data_calls(out)) == 1 and out["streams"] == 0


def test_a_restarted_servers_lost_session_reaches_gradio_and_nothing_more_is_asked():
    # As Gradio's server answers a session it no longer holds: 200, unexpected_error, then a cut.
    lost = {"msg": "unexpected_error", "event_id": None, "message": "", "session_not_found": True, "success": False}
    out = run([[completed("A"), CLOSE], [lost, "cut"]], ["A"], {0: ("B", True)}, expect=3)
    assert out["got"] == ["process_completed A", "unexpected_error"]  # Gradio tells the user
    assert len(data_calls(out)) == 2


def test_a_stream_that_cannot_be_had_again_ends_in_an_error_gradio_reports():
    # No stream to be had (a proxy's 404) while B is owed: asked again 3 times, then Gradio's client
    # gets the error (its "connection lost") instead of waiting forever.
    out = run([[completed("A"), CLOSE]], ["A"], {0: ("B", True)}, expect=3, limit_ms=6000)  # 0.5 + 1 + 2 s between
    assert out["got"] == ["process_completed A", "error: answer stream: HTTP 404"]
    assert len(data_calls(out)) == 1 + 1 + 3


def test_a_connection_lost_while_nothing_is_owed_is_forgotten():
    out = run([[completed("A"), "cut"], [completed("B"), CLOSE]], ["A"], {0: ("B", False)}, expect=2)
    assert out["got"] == ["process_completed A", "process_completed B"]


def test_a_lost_session_forgets_what_it_owed():
    lost = {"msg": "unexpected_error", "event_id": None, "message": "x", "success": False}
    out = run([[lost]], ["A"], {}, expect=2)
    assert out["got"] == ["unexpected_error"] and len(data_calls(out)) == 1


def test_messages_cut_anywhere_by_the_network_reach_gradio_whole_and_in_order():
    # A large answer comes in many pieces: cuts inside a message, between its blank line's two
    # "\n", and inside a character of several bytes ("é", "猫") must give Gradio the same messages.
    text = "é猫\\n" * 20_000  # an escaped newline inside the JSON, as orjson writes one
    messages = [{"msg": "process_completed", "event_id": e, "output": {"text": f"{e}{text}{e}"}, "success": True}
                for e in ("A", "B")]
    wire = len(("data: " + json.dumps(messages[0], ensure_ascii=False, separators=(",", ":"))).encode())  # node's bytes
    # tiny pieces (some split a blank line's two "\n"), the network's usual size, and a cut 2/3 into a message
    for pieces in ((1, 2, 3, 5, 8), (4096,), (2 * wire // 3,)):
        out = run([[messages[0], HEARTBEAT, messages[1], CLOSE]], ["A", "B"], {}, expect=3, pieces=pieces,
                  limit_ms=10_000)
        assert out["got"] == [f"process_completed A A{text}A", "heartbeat", f"process_completed B B{text}B"], pieces
