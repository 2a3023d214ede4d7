// js= of the work ahead (page/kit.py: Ctx.show_visible), run just before it is sent: its first
// input becomes the tab open in the page now. The session's tab state may not have heard yet of a
// tab opened a moment ago (its own event races this one to the server), and the open tab must
// never be drawn ahead over: its own answer is what it shows.
(tab, ...rest) => [document.querySelector(`#${VIZVIT_IDS.TABS} button[role=tab][aria-selected=true]`)?.dataset.tabId ?? tab, ...rest]
