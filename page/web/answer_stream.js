// The session's stream of answers, kept for Gradio's client for the page's whole life (installed
// once, in the page's head: web.page_head). Gradio 6.31's server ends a session's stream
// (/queue/data) with close_stream once the last event it knows of is answered, and its page client
// then shuts the stream whatever it still waits for; it opens one only when it joins an event while
// none is open. An event joined as that close was on its way could have its join answered first (a
// stream open: none opened), then lose the stream: its answer was never read and its picture never
// came (CI, twice: "showed no new picture", the stream logged as net::ERR_ABORTED).
// Here Gradio's client is given one stream that never closes. The page's fetch notes each event
// joined (its id, read from /queue/join's answer before Gradio sees it) and reads the server's
// streams into that one: a close_stream is not passed on; the server is asked for a new stream
// whenever an event of the session is unanswered and none is open (the server keeps the session's
// answers meanwhile). Between events no request is open, as before. Its requests say so
// (REOPENS_HEADER), so the server does not hold their close (page/stream_grace.py).
() => {
  if (window.__vizvitAnswers) return;
  // session hash -> {owed: its events joined whose answer has not passed, early: answers that
  // passed before their join was noted (a quick event's answer can beat its join's on the other
  // connection), wake: the stream's resolve while it waits for an event joined}
  const sessions = {};
  const answers = window.__vizvitAnswers = { sessions, streams: 0 };  // streams: asked again
  const real = window.fetch.bind(window);
  const of = (session) => sessions[session] || (sessions[session] = { owed: new Set(), early: new Set(), wake: null });
  const HEAD = /^\{"msg":"([a-z_]+)","event_id":(?:null|"([^"]*)")/;  // orjson's message, as Gradio writes it
  const EARLY_KEPT = 64;
  const TRIES = 3;  // a server stream that fails while an answer is owed is asked for again this often
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const utf8 = new TextDecoder();  // a message head (its msg and event_id are ASCII)
  const LF = 10;

  // A server stream's bytes cut into its messages, each ending in a blank line ("\n\n"), in time
  // linear in the bytes however the network cuts them (a large answer comes in many pieces; the
  // text decoded, searched from its start and encoded again for each piece cost the upload's
  // answer tens of milliseconds). feed(piece) returns the messages the piece completes.
  const splitter = () => {
    let parts = [], lf = false;  // the message so far, and whether its last byte is "\n"
    const whole = () => {
      if (parts.length === 1) return parts[0];
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) { out.set(p, at); at += p.length; }
      return out;
    };
    return {
      feed(piece) {
        const done = [];
        let start = 0, from = 0, i;
        while ((i = piece.indexOf(LF, from)) >= 0) {
          if (i > start ? piece[i - 1] === LF : lf) {
            parts.push(piece.subarray(start, i + 1));
            done.push(whole());
            parts = [];
            lf = false;
            start = i + 1;
          }
          from = i + 1;
        }
        if (start < piece.length) { parts.push(piece.subarray(start)); lf = piece[piece.length - 1] === LF; }
        return done;
      },
    };
  };

  // One message of a server stream (the bytes of "data: {...}\n\n"): whether Gradio's client gets it.
  // Only its head is read: the message itself goes on as the server's bytes.
  const passes = (s, message) => {
    const head = utf8.decode(message.subarray(0, 200));
    const m = HEAD.exec(head.startsWith('data: ') ? head.slice(6) : '');
    if (!m) return true;
    if (m[1] === 'process_completed' && m[2] && !s.owed.delete(m[2])) {
      s.early.add(m[2]);
      if (s.early.size > EARLY_KEPT) s.early.delete(s.early.values().next().value);
    }
    if (m[1] === 'unexpected_error') { s.owed.clear(); s.early.clear(); }  // the server stopped, or lost the session
    return m[1] !== 'close_stream';
  };
  const noteJoin = (session, id) => {
    const s = of(session);
    if (s.early.delete(id)) return;  // answered already
    s.owed.add(id);
    s.wake?.();
    s.wake = null;
  };

  // Gradio's stream for `session`: the server's streams one after another (the first, then each
  // asked for with ask() when an event is owed and none is open). Pulled only as Gradio reads.
  // A server stream that fails or ends with nothing said while an answer is owed is asked for again
  // (TRIES times, waiting longer each time), then the error goes to Gradio ("connection lost"); one
  // that fails with nothing owed is forgotten: this is the only stream Gradio will read again.
  const kept = (session, first, ask, signal) => {
    const s = of(session), ready = [];  // ready: messages read, not yet given to Gradio
    let reader = first.body.getReader(), split = splitter(), said = false, tries = 0;
    const stopped = new Promise((_, fail) => signal.addEventListener('abort', () => {
      s.owed.clear();  // Gradio gave up its stream: the server drops the session's events
      fail(signal.reason);
    }, { once: true }));
    stopped.catch(() => null);
    const joined = () => new Promise((resolve) => { s.wake = resolve; });
    const failed = async (e) => {
      reader = null;
      split = splitter();
      if (signal.aborted || (s.owed.size > 0 && ++tries > TRIES)) throw e;
      if (s.owed.size > 0) await Promise.race([sleep(250 * 2 ** tries), stopped]);
    };
    return new ReadableStream({
      async pull(out) {
        try {
          for (;;) {
            if (ready.length > 0) {
              const message = ready.shift();
              said = true;
              tries = 0;
              if (passes(s, message)) { out.enqueue(message); return; }
              continue;
            }
            if (reader) {
              let chunk;
              try { chunk = await reader.read(); } catch (e) { await failed(e); continue; }
              if (!chunk.done) { ready.push(...split.feed(chunk.value)); continue; }
              reader = null;  // the server closed its stream: the next event owed asks for another
              split = splitter();
              if (!said) { await failed(new Error('answer stream: ended with nothing said')); continue; }
            }
            if (s.owed.size === 0) { await Promise.race([joined(), stopped]); continue; }
            let response;
            try { response = await Promise.race([ask(), stopped]); } catch (e) { await failed(e); continue; }
            if (!response.ok || !response.body) { await failed(new Error(`answer stream: HTTP ${response.status}`)); continue; }
            answers.streams += 1;
            reader = response.body.getReader();
            said = false;
          }
        } catch (e) {
          s.owed.clear();
          out.error(e);
        }
      },
      cancel(reason) { if (reader) return reader.cancel(reason); },
    }, { highWaterMark: 0 });
  };

  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    const method = (init?.method || (input instanceof Request ? input.method : 'GET')).toUpperCase();
    if (url.pathname.endsWith('/queue/join') && method === 'POST') {
      const r = await real(input, init);
      if (r.ok) {  // noted before Gradio reads the answer: the stream then waits for its answer
        let session = null;
        try { session = JSON.parse(String(init?.body ?? 'null'))?.session_hash; } catch { /* not Gradio's join */ }
        const id = (await r.clone().json().catch(() => null))?.event_id;
        if (typeof session === 'string' && typeof id === 'string') noteJoin(session, id);
      }
      return r;
    }
    if (!url.pathname.endsWith('/queue/data') || method !== 'GET') return real(input, init);
    const request = new Request(input, init);
    request.headers.set(REOPENS_HEADER, '1');
    const first = await real(request.clone());
    if (!first.ok || !first.body) return first;
    return new Response(kept(url.searchParams.get('session_hash') || '', first, () => real(request.clone()), request.signal),
      { status: first.status, statusText: first.statusText, headers: first.headers });
  };
}
