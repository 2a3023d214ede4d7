"""Issue 27, a tab's first open: what a tab needs of the model is made when the model is warmed, what
it needs of a photo right after the photo's forward (in the background), and the Positions tab's
slow part (a forward at another size) is not in its first answer."""

from __future__ import annotations

import pytest

from vizvit import engine, session, views
from vizvit.session import PhotoKey, Workbench
from vizvit.views import embeddings, positions

from tiny import EXAMPLES

PHOTO = str(EXAMPLES / "chelsea.jpg")


@pytest.fixture
def wb(tiny16) -> Workbench:
    w = views.attach(Workbench(device="cpu"))
    w.add_model(tiny16)
    return w


def model_keys(model_id: str) -> list[tuple]:
    size = positions.PositionsParams().size
    return [session.model_key(model_id, n) for n in (session.POSITIONS, session.FILTER_PCA,
                                                      session.positions_at_name(size))]


def test_attach_gives_the_workbench_each_views_preparation(wb):
    assert embeddings.warm_model in wb.model_work and positions.warm_model in wb.model_work
    assert embeddings.warm_photo in wb.photo_work
    assert Workbench().model_work == () and Workbench().photo_work == (), "nothing prepares without attach"


def test_warm_leaves_the_models_position_tables_and_filters_and_the_photos_embeddings_cached(wb, tiny16):
    for k in model_keys(tiny16.id):
        assert k not in wb.cache, f"{k} cached before the warm-up"
    wb.warm(tiny16.id, [PHOTO])
    for k in model_keys(tiny16.id):
        assert k in wb.cache, f"{k} not cached by the warm-up"
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    assert wb.peek_derived(key, session.EMBEDDINGS) is not None, "the example's Embeddings data is not ready"


def test_prepare_later_fills_the_cache_so_a_first_open_recomputes_nothing(wb, tiny16, monkeypatch):
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    wb.analysis(key)  # the photo's forward, as the upload runs it
    assert wb.peek_derived(key, session.EMBEDDINGS) is None
    wb.prepare_later(key).result(timeout=120)
    assert wb.peek_derived(key, session.EMBEDDINGS) is not None
    assert all(k in wb.cache for k in model_keys(tiny16.id))
    # The tabs' first open now only draws: the preparations' own computations are not run again.
    for name in ("prepare", "model_filters"):
        monkeypatch.setattr(embeddings, name, lambda *a, **k: pytest.fail("recomputed after prepare_later"))
    monkeypatch.setattr(positions, "model_positions", lambda *a, **k: pytest.fail("recomputed after prepare_later"))
    ph = wb.handle(key)
    embeddings.show(ph, embeddings.EmbeddingsParams())
    embeddings.rest(ph, embeddings.EmbeddingsParams())
    positions.show(ph, positions.PositionsParams())


def test_a_failing_preparation_is_logged_and_the_others_still_run(wb, tiny16, caplog):
    def broken(ph):
        raise RuntimeError("boom")

    wb.photo_work = (broken, *wb.photo_work)
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    wb.prepare_later(key).result(timeout=120)
    assert "boom" in caplog.text or "broken" in caplog.text
    assert wb.peek_derived(key, session.EMBEDDINGS) is not None


def test_the_positions_first_answer_runs_no_forward_at_another_size(wb, tiny16, monkeypatch):
    calls = []
    real = engine.predict_at_size
    monkeypatch.setattr(engine, "predict_at_size", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(PHOTO)))
    page = positions.show(ph, positions.PositionsParams(size=384))
    assert page.grid.ndim == 3 and calls == [], "the grid waited for the forward at 384 px"
    later = positions.resolution_panel(ph, 384)  # the tab's follow-up answer
    assert calls == [384] and later.text.startswith("**At 384×384 px**")
