// A deep link's tab (page/shell.py's link_tab): click its button, as a person would. Setting
// gr.Tabs(selected=...) from Python would make the Tabs container an event output, and Gradio
// then re-reads every component inside it on every status message of every event (page/events.py).
// "id#n" (the lesson's Open button counts its clicks, so the same tab twice is still a change): the id.
(tabId) => {
  tabId = (tabId || '').split('#')[0];
  const b = tabId && document.querySelector(`#${VIZVIT_IDS.TABS} button[role=tab][data-tab-id="${tabId}"]`);
  if (b && b.getAttribute('aria-selected') !== 'true') b.click();
}
