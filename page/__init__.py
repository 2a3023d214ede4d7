"""The web page: gradio wiring over `vizvit` (which never imports gradio).

kit.py      what every tab uses: Ctx, answer / in_line, safe, the empty result, the on_show dispatch
jobs.py     the costly jobs: who a caller is, the fair line's wait shown, who stops a job
sessions.py Gradio's sessions: bounded in memory, one this process never served told to reload
events.py   what every event keeps to: no container output, at most one progress target
shell.py    build_demo: the header, the tabs from vizvit.vocab.TABS, the deep links
endpoints   the public API (gradio_client)
tabs/<id>   one module per tab, named like its tab id: components named like the
            fields of its view's Page, handlers that make one views call
"""

from vizvit.service.threads import configure_malloc, configure_threads

configure_threads()  # OMP_WAIT_POLICY=PASSIVE and the thread count, before torch loads
configure_malloc()  # freed result tensors go back to the OS: RSS stays within the cache budget
