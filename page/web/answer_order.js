// js= of every event of one line of view events (page/ordered.py, AnswerOrder). Its first input is
// the line's hidden stamp box, which every answer sets to its own event's stamp; it becomes
// "page:n:acked": n counts the events this page has sent, in the order it sends them (run just
// before the event is sent: a slider event Gradio held back gets a later n than a click sent while
// it waited, and carries the controls as they are after that click), and acked is the n of the
// last answer this page had taken in (the controls gathered with it include what that answer set).
(...inputs) => {
  const o = window.__vizvitOrder || (window.__vizvitOrder = { page: Math.random().toString(36).slice(2), n: 0 });
  const acked = Number(String(inputs[0] || '').split(':')[1]) || 0;
  return [o.page + ':' + (++o.n) + ':' + acked, ...inputs.slice(1)];
}
