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
  const owed = {};  // session hash -> Set of its events joined whose answer has not passed
  const wakes = {};  // session hash -> the stream's resolve, while it waits for an event joined
  const answers = window.__vizvitAnswers = { owed, streams: 0 };  // streams: asked again
  const real = window.fetch.bind(window);
  const owedOf = (session) => owed[session] || (owed[session] = new Set());
  const HEAD = /^\{"msg":"([a-z_]+)","event_id":(?:null|"([^"]*)")/;  // orjson's message, as Gradio writes it

  // One message of a server stream ("data: {...}"): whether Gradio's client gets it.
  const passes = (session, event) => {
    const m = HEAD.exec(event.startsWith('data: ') ? event.slice(6, 200) : '');
    if (!m) return true;
    if (m[1] === 'process_completed' && m[2]) owedOf(session).delete(m[2]);
    if (m[1] === 'unexpected_error') owedOf(session).clear();  // the server stopped, or lost the session
    return m[1] !== 'close_stream';
  };

  // Gradio's stream for `session`: the server's streams one after another (the first, then each
  // asked for with ask() when an event is owed and none is open). Pulled only as Gradio reads.
  const kept = (session, first, ask, signal) => {
    const text = new TextDecoder(), bytes = new TextEncoder();
    let reader = first.body.getReader(), buffer = '';
    const stopped = new Promise((_, fail) => signal.addEventListener('abort', () => fail(signal.reason), { once: true }));
    stopped.catch(() => null);
    const joined = () => new Promise((resolve) => { wakes[session] = resolve; });
    return new ReadableStream({
      async pull(out) {
        try {
          for (;;) {
            const cut = buffer.indexOf('\n\n');
            if (cut >= 0) {
              const event = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              if (passes(session, event)) { out.enqueue(bytes.encode(event + '\n\n')); return; }
              continue;
            }
            if (reader) {
              const chunk = await reader.read();
              if (!chunk.done) { buffer += text.decode(chunk.value, { stream: true }); continue; }
              reader = null;  // the server closed its stream: the next event owed asks for another
              buffer = '';
            }
            if (owedOf(session).size === 0) { await Promise.race([joined(), stopped]); continue; }
            const response = await Promise.race([ask(), stopped]);
            if (!response.ok || !response.body) throw new Error(`answer stream: HTTP ${response.status}`);
            answers.streams += 1;
            reader = response.body.getReader();
          }
        } catch (e) {
          owedOf(session).clear();
          out.error(e);
        }
      },
      cancel(reason) { if (reader) return reader.cancel(reason); },
    }, { highWaterMark: 0 });
  };

  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if (url.pathname.endsWith('/queue/join')) {
      const r = await real(input, init);
      if (r.ok) {  // noted before Gradio reads the answer: the stream then waits for its answer
        let session = null;
        try { session = JSON.parse(String(init?.body ?? 'null'))?.session_hash; } catch { /* not Gradio's join */ }
        const id = (await r.clone().json().catch(() => null))?.event_id;
        if (typeof session === 'string' && typeof id === 'string') {
          owedOf(session).add(id);
          wakes[session]?.();
          delete wakes[session];
        }
      }
      return r;
    }
    if (!url.pathname.endsWith('/queue/data')) return real(input, init);
    const request = new Request(input, init);
    request.headers.set(REOPENS_HEADER, '1');
    const session = url.searchParams.get('session_hash') || '';
    const first = await real(request.clone());
    if (!first.ok || !first.body) return first;
    return new Response(kept(session, first, () => real(request.clone()), request.signal),
      { status: first.status, statusText: first.statusText, headers: first.headers });
  };
}
