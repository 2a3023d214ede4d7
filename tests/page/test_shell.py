"""A real browser uses the real page: upload, look, click. Screenshots are artifacts."""

from __future__ import annotations

import re

from appserver import running
from browser import click_image_at, page_at, shot, upload, wait_image
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from settle import settled
from tiny import EXAMPLES


def test_upload_shows_the_patch_grid_and_a_click_names_the_patch(url):
    with page_at(url) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        wait_image(page, "sequence-strip")
        page.wait_for_selector("#top5 .js-plotly-plot", timeout=60_000)
        shot(page, "patches_tab")
        # Patch (row 2, col 5) of the 14×14 grid: click the middle of that cell.
        click_image_at(page, "patch-grid", (5 + 0.5) / 14, (2 + 0.5) / 14)
        page.wait_for_function(
            "() => document.querySelector('#patch-info').innerText.includes('row 2, col 5')")
        assert "token index 34" in page.inner_text("#patch-info")
        shot(page, "patches_tab_clicked", full_page=False)


def test_the_methods_link_reaches_the_panel_and_its_text_comes_when_it_opens(url):
    """The text is not in the page's config (issue 52): opening the panel brings it."""
    with page_at(url + "#methods") as page:
        panel = page.locator("#methods")
        panel.wait_for(state="visible")
        assert "Head ablation" not in panel.inner_text()
        panel.get_by_text("Methods and sources", exact=False).first.click()
        page.wait_for_selector("#methods-text h2:has-text('Head ablation')", timeout=30_000)
        assert "Attention rollout" in page.inner_text("#methods-text")


def test_invalid_upload_shows_an_error_and_says_the_old_photo_is_still_shown(url, tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo at all")
    with page_at(url) as page:
        upload(page, str(bad))
        page.wait_for_selector("text=not an image we can read", timeout=60_000)  # the toast
        page.wait_for_selector("#status:has-text('was not used')")
        status = page.inner_text("#status")
        assert "not an image we can read" in status, "the refusal stays readable in the status line"
        assert "Upload a photo or pick an example" in status  # nothing to show yet
        # The refused file's name does not stay in the box as if it were shown.
        page.wait_for_selector("#upload input[type=file]", state="attached")
        assert "notes.jpg" not in page.inner_text("#upload")
        shot(page, "invalid_upload", full_page=False)
        # After a good photo, a bad file leaves the good photo's tabs: the status says so.
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_selector("#status:has-text('top-1')")
        page.locator("#upload button[aria-label='Clear']").first.click()
        page.wait_for_selector("#status:has-text('The upload box is empty')")
        assert "still show the previous photo" in page.inner_text("#status")
        upload(page, str(bad))
        page.wait_for_selector("#status:has-text('was not used')")
        assert "still show the previous photo" in page.inner_text("#status")


def test_a_file_of_another_type_is_refused_naming_only_the_types_the_page_names(url, tmp_path):
    """Issue 51: a .txt got Gradio's toast "Only ..., .heic, .heif, .avif, .svg allowed" while the box
    says JPEG, PNG, WebP, GIF, BMP, TIFF: the toast lists what the page takes, no more."""
    txt = tmp_path / "notes.txt"
    txt.write_text("not a photo")
    with page_at(url) as page:
        label = page.inner_text("#upload")
        upload(page, str(txt))
        page.wait_for_selector("text=Invalid file type", timeout=60_000)
        toast = page.locator(".toast-body").first.inner_text().lower()
        for kind in ("heic", "heif", "avif", "svg"):
            assert kind not in toast, toast
        listed = set(re.findall(r"\.(\w+)", toast.split("only", 1)[1]))
        assert listed == {"jpg", "jpeg", "png", "webp", "gif", "bmp", "tif", "tiff"}, toast
        assert "JPEG, PNG, WebP, GIF, BMP, TIFF" in label, label  # the same six formats, as the box names them


def test_a_model_that_cannot_be_loaded_leaves_the_list_and_the_box_names_the_shown_model(url, tiny16):
    with page_at(url) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_selector("#status:has-text('top-1')")
        box = page.locator("#model input")
        box.click()
        page.get_by_role("option", name=re.compile(r"^google\/vit-base-patch16-224( \(|$)")).click()  # offline here
        page.wait_for_selector("#status:has-text('cannot be loaded here')")
        assert "top-1" in page.inner_text("#status"), "the shown photo's status stays"
        page.wait_for_function("([v]) => document.querySelector('#model input').value === v",
                               arg=["local: p16"])
        box.click()
        names = page.get_by_role("option").all_inner_texts()
        assert not any(n.startswith("google/vit-base-patch16-224") for n in names)
        assert "random:vit-base-patch16-224" in " ".join(names)
        shot(page, "model_unavailable", full_page=False)
        # The offered twin, once picked, stays picked, and the page says so at once.
        page.get_by_role("option", name=re.compile(r"^random:vit-base-patch16-224( \(|$)")).click()
        page.wait_for_selector("#status:has-text('random weights')", timeout=5_000)  # "Building … random weights"
        page.wait_for_selector("#status:has-text('top-1')")
        page.wait_for_selector("#banner:has-text('untrained random weights')")
        settled(page)
        assert page.locator("#model input").input_value().startswith("random:vit-base-patch16-224")
        assert "random:vit-base-patch16-224" in page.inner_text("#status")
    # A second visitor never sees the model that failed for the first.
    # The page's load event brings this visitor's list (the page's first render is the one built at
    # start); read the open list until that has arrived (20 tries).
    with page_at(url) as page:
        page.wait_for_function("() => document.querySelector('#model input').value === 'local: p16'")
        names: list[str] = []
        for _ in range(20):
            # Blur first: a click on a box that kept focus after Escape does not reopen its list.
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            page.locator("#model input").click()
            try:
                page.get_by_role("option").first.wait_for(timeout=5_000)  # the list opens a tick after the click
            except PlaywrightTimeout:
                pass
            names = page.get_by_role("option").all_inner_texts()
            page.keyboard.press("Escape")
            if names and not any(n.startswith("google/vit-base-patch16-224") for n in names):
                break
            page.wait_for_timeout(500)
        assert names and not any(n.startswith("google/vit-base-patch16-224") for n in names), names
        assert "random:vit-base-patch16-224" in " ".join(names)


def test_untrained_banner_stays_beside_a_deep_link_notice():
    """Offline with random weights: the plain-language banner is on the page, and a deep link with
    bad values adds its own notice without replacing the banner."""
    import vizvit

    vm = vizvit.load_model("random:vit-base-patch16-224", device="cpu")
    with running(vm, offline=True) as u, page_at(u + "?example=chelsea&layer=99&head=foo&tab=attention") as page:
        page.wait_for_selector("#notice:has-text('About this link')")
        banner = page.inner_text("#banner")
        assert "No internet connection" in banner and "untrained random weights" in banner
        assert "Error" not in banner and "--model" not in banner
        assert page.locator("#banner").is_visible()
        shot(page, "banner_and_deeplink_notice", full_page=False)


def test_the_link_to_a_view_of_a_local_model_names_it_by_its_folder_never_by_its_path(url, tiny16):
    """tiny16 was loaded from a temp directory: the link, the page and the status never show that
    path, and the link opens the same model."""
    from pathlib import Path
    from urllib.parse import parse_qs, urlsplit

    server_dir = str(Path(tiny16.id).resolve())
    with page_at(url + "?example=chelsea&tab=attention&layer=2") as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.click("#copy-link")
        page.wait_for_function("() => document.querySelector('#link-box textarea').value.includes('?')")
        link = page.locator("#link-box textarea").input_value()
        assert server_dir not in link and "/tmp" not in link and "%2F" not in link, link
        assert parse_qs(urlsplit(link).query)["model"] == ["p16"], link
        for where in ("#status", "#model"):
            assert server_dir not in page.inner_text(where), where
        assert server_dir not in page.content(), "nor anywhere in the page"
        config = page.request.get(url + "config").text()
        assert '"p16"' in config and server_dir not in config, "nor in the page's config (the dropdown's values)"
    with page_at(link) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        assert page.locator("#model input").input_value() == "local: p16"
        assert not page.locator("#notice").is_visible(), "the link's model was found"
        assert server_dir not in page.content()


def test_a_student_waiting_for_the_model_sees_where_their_photo_is(tiny16, tmp_path):
    """Another visitor's forward is held in the model's queue and a third photo waits behind it:
    the new upload's status says how many photos are ahead, and the answer follows once they run."""
    import threading

    import numpy as np
    from appserver import page_name, serving
    from forwards_kit import HeldForwards
    from PIL import Image

    from vizvit.model.forwards import ForwardQueue
    from vizvit.session import PhotoKey

    with serving(tiny16) as (url, wb):
        held = HeldForwards()
        wb.forwards = ForwardQueue(run_batch=held)
        others = [PhotoKey(page_name(tiny16), wb.add_photo(str(EXAMPLES / n))) for n in ("coffee.jpg", "astronaut.jpg")]
        first = threading.Thread(target=wb.analysis, args=(others[0],))
        first.start()
        assert held.started.wait(30)  # running, held
        second = threading.Thread(target=wb.analysis, args=(others[1],))
        second.start()  # waiting behind it
        mine = tmp_path / "mine.png"
        Image.fromarray(np.random.default_rng(3).integers(0, 255, (240, 320, 3), np.uint8)).save(mine)
        with page_at(url) as page:
            upload(page, str(mine))
            page.wait_for_selector("#status:has-text('waiting for the model')", timeout=60_000)
            status = page.inner_text("#status")
            assert re.search(r"\b2 other photos ahead of yours\b", status), status
            shot(page, "queue_position", full_page=False)
            held.release.set()
            page.wait_for_selector("#status:has-text('top-1')", timeout=60_000)
        first.join(30)
        second.join(30)


# -- the header's handlers alone (no browser, no server): page/shell.py's named functions ---------------
from types import SimpleNamespace  # noqa: E402

import gradio as gr  # noqa: E402
import pytest  # noqa: E402

from page import shell  # noqa: E402
from vizvit import deeplink, vocab  # noqa: E402
from vizvit.model.catalog import Catalog  # noqa: E402
from vizvit.session import Workbench  # noqa: E402


@pytest.fixture(scope="module")
def server(tiny16) -> shell.Server:
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    catalog = Catalog(tiny16.id)
    wb.catalog = catalog
    return shell.Server(wb, catalog, catalog.public(tiny16.id), tab_ids=tuple(vocab.TAB_IDS))


def _request(query: dict | None = None, referer: str = "http://page.example/?tab=patches"):
    return SimpleNamespace(query_params=query or {}, headers={"referer": referer}, url=referer)


def test_a_link_sets_each_view_control_once_by_its_deeplink_name(server):
    k = deeplink.DeepLink(layer=2, head=1, query=(3, 4), dx=5)
    controls = shell.link_controls(k, server.wb.model(server.default_model).geometry, vocab.ONE_HEAD)
    assert tuple(controls) == deeplink.VIEW_CONTROLS, "one spelling: the page lists them in this order"
    assert controls["layer"].value == 2 and controls["head"].value == 1 and controls["query"] == (3, 4)
    assert controls["dx"] == 5 and controls["show"] == vocab.ONE_HEAD and controls["compare"] == gr.skip()


def test_opening_a_link_sets_the_tab_and_its_controls(server):
    got = shell.open_link(server, _request({"tab": "attention", "layer": "1", "head": "2"}))
    g = server.wb.model(server.default_model).geometry
    assert got["tab"] == got["link_tab"] == "attention"
    assert (got["layer"].value, got["layer"].maximum) == (1, g.num_layers)
    assert got["head"].value == 2 and got["show"] == vocab.ONE_HEAD
    assert got["link_example"] is None and got["notice_md"] == gr.skip() and got["zs_on"] == "off"
    bad = shell.open_link(server, _request({"tab": "nowhere"}))
    assert "About this link" in bad["notice_md"].value and bad["tab"] == gr.skip()
    # a step past the lesson's 13 (lesson.toml) is said, as step=0 is (it showed step 13 with no word)
    far = shell.open_link(server, _request({"lesson": "1", "step": "99"}))
    assert "The lesson has 13 steps: step 99 does not exist" in far["notice_md"].value


def test_the_copied_link_reopens_the_view_it_was_copied_from(server):
    g = server.wb.model(server.default_model).geometry
    parts = dict(layer=2, head=2, show=vocab.ONE_HEAD, query=(1, 3), direction="column", mode="raw", dx=0, dy=0,
                 fill="edge", mask=[], mask_mode="drop", ablate="", ablate_mode="zero", compare=None, depth=0)
    url = shell.copy_link(server, _request(), None, server.default_model, "attention", False, 1, "mean",
                          *(parts[n] for n in deeplink.VIEW_CONTROLS))
    page, query = url.split("?")
    assert page == "http://page.example/"
    reopened = shell.open_link(server, _request(dict(q.split("=") for q in query.split("&"))))
    assert reopened["tab"] == "attention" and reopened["layer"].value == 2 and reopened["head"].value == 2
    assert reopened["query"] == (1, 3) and reopened["direction"] == "column" and g.num_layers >= 2
    on_compare = shell.copy_link(server, _request(), None, server.default_model, "compare", False, 1, "mean",
                                 *(parts[n] for n in deeplink.VIEW_CONTROLS))
    assert "layer=1" in on_compare, "on the Compare tab the layer is its cursor's"
    # The Experiments tab's shift with its border fill, and its mask with how it is removed.
    parts |= dict(dx=5, dy=-7, fill="wrap", mask=[3, 17], mask_mode="blur")
    url = shell.copy_link(server, _request(), None, server.default_model, "experiments", False, 1, "mean",
                          *(parts[n] for n in deeplink.VIEW_CONTROLS))
    assert "dx=5&dy=-7&fill=wrap&mask=3,17&mask_mode=blur" in url, url
    reopened = shell.open_link(server, _request(dict(q.split("=") for q in url.split("?")[1].split("&"))))
    assert (reopened["dx"], reopened["dy"], reopened["fill"], reopened["mask"], reopened["mask_mode"]) == (
        5, -7, "wrap", (3, 17), "blur")
    plain = shell.open_link(server, _request({"tab": "experiments"}))
    assert plain["fill"] == gr.skip() and plain["mask_mode"] == gr.skip(), "a link without them leaves them be"


def _reopened(server, url: str) -> dict:
    return shell.open_link(server, _request(dict(q.split("=") for q in url.split("?")[1].split("&"))))


VIEW = dict(layer=2, head=2, show=vocab.ONE_HEAD, query=None, direction="row", mode="raw", dx=0, dy=0, fill="edge",
            mask=[], mask_mode="drop", ablate="", ablate_mode="zero", compare=None, depth=0)


def test_the_copied_link_of_the_embeddings_tab_keeps_its_depth_and_reopens_it(server):
    """A student's copied link on the Embeddings tab opened at depth 0, whatever depth they saw."""
    g = server.wb.model(server.default_model).geometry  # tiny16: 2 layers, depths 0..2
    for d in (0, 1, 2):
        parts = VIEW | {"depth": float(d)}  # a slider's value
        url = shell.copy_link(server, _request(), None, server.default_model, "embeddings", False, 1, "mean",
                              *(parts[n] for n in deeplink.VIEW_CONTROLS))
        assert url.endswith(f"tab=embeddings&layer=2&head=2&depth={d}"), url
        got = _reopened(server, url)
        assert (got["depth"].value, got["depth"].maximum) == (d, g.num_layers) and got["notice_md"] == gr.skip()
    plain = shell.open_link(server, _request({"tab": "embeddings"}))
    assert plain["depth"] == gr.skip(), "a link without depth= leaves the slider be"
    for bad in ("3", "-1", "nan", "9" * 5000, "1.5"):
        got = shell.open_link(server, _request({"tab": "embeddings", "depth": bad}))
        assert got["depth"] == gr.skip() and "About this link" in got["notice_md"].value, bad[:20]
        assert "depth" in got["notice_md"].value.lower(), got["notice_md"].value


def test_the_copied_link_of_the_compare_tab_keeps_its_head_and_reopens_it(server):
    """The Compare tab's head (a fusion or head k) was left out of its copied link, the Attention tab's taken."""
    m = server.default_model  # as model B too: 2 heads each
    for head, want in (("2", "head=2"), ("max", "head=max"), ("mean", "head=mean")):
        url = shell.copy_link(server, _request(), None, m, "compare", False, 1, head,
                              *((VIEW | {"compare": m})[n] for n in deeplink.VIEW_CONTROLS))
        assert url.endswith(f"&layer=1&{want}"), url
        got = _reopened(server, url)
        assert got["cmp_depth"] == 1 and got["cmp_head"].value == head, (head, got["cmp_head"])
        assert got["cmp_head"].choices == [(c, c) for c in ("mean", "max", "min", "1", "2")], got["cmp_head"].choices
    for bad in ("3", "0", "nan", "-2", "9" * 5000, "<b>"):
        got = shell.open_link(server, _request({"tab": "compare", "compare": m, "head": bad}))
        assert got["cmp_head"] == gr.skip() and "About this link" in got["notice_md"].value, bad[:20]
    other = shell.open_link(server, _request({"tab": "attention", "head": "2"}))
    assert other["cmp_head"] == gr.skip() and other["cmp_depth"] == gr.skip(), "another tab's head stays its own"



def test_the_copied_link_of_an_uploaded_photo_reopens_that_photo_and_an_examples_names_the_example(server, tmp_path):
    """A walk-through: with an uploaded photo the copied link read ?model=...&tab=compare&layer=12&head=mean and
    opened with no photo. Known answer: the photo's key (its SHA-1) in the link, the link reopening that key."""
    import numpy as np
    from PIL import Image

    from vizvit.session import PhotoKey

    mine = tmp_path / "mine.png"  # no example: a gradient of its own
    Image.fromarray(np.tile(np.arange(0, 256, 4, dtype=np.uint8), (48, 1))[..., None].repeat(3, 2)).save(mine)
    m = server.default_model
    sha1 = server.wb.add_photo(str(mine))
    parts = VIEW | {"compare": m}
    url = shell.copy_link(server, _request(), PhotoKey(m, sha1), m, "compare", False, 1, "mean",
                          *(parts[n] for n in deeplink.VIEW_CONTROLS))
    assert url.endswith(f"&layer=1&head=mean&photo={sha1}") and "example=" not in url, url
    got = _reopened(server, url)
    assert got["key"].sha1 == sha1 and got["tab"] == "compare" and got["notice_md"] == gr.skip(), url
    ex = server.wb.add_photo(str(EXAMPLES / "chelsea.jpg"))
    url = shell.copy_link(server, _request(), PhotoKey(m, ex), m, "attention", False, 1, "mean",
                          *(VIEW[n] for n in deeplink.VIEW_CONTROLS))
    assert "?example=chelsea&" in url and "photo=" not in url, url

def test_a_new_photo_answers_its_key_at_once_then_the_forwards_result_and_a_bad_file_keeps_the_old(server, tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo at all")
    m = server.default_model
    (refused,) = shell.new_photo(server, str(bad), m, None, "", "zero")
    assert "not an image we can read" in refused["status"] and refused["upload"] is None
    steps = list(shell.new_photo(server, str(EXAMPLES / "chelsea.jpg"), m, None, "", "zero"))
    assert steps[0]["key"].sha1 and steps[0]["shown_file"] == str(EXAMPLES / "chelsea.jpg")
    assert "top-1" in steps[-1]["status"]
    k = steps[0]["key"]
    cat = str(EXAMPLES / "chelsea.jpg")
    again = list(shell.new_photo(server, str(bad), m, k, "", "zero", "", "a photo of {}", cat))
    assert again[0]["upload"] == str(EXAMPLES / "chelsea.jpg"), "the box names the photo the tabs still show"
    assert "still show the previous photo" in again[0]["status"]
    assert list(shell.new_photo(server, None, m, k, "", "zero")) == [{n: gr.skip() for n in shell.PHOTO_OUTS}]


def test_a_model_off_the_list_is_refused_before_loading(server):
    with pytest.raises(Exception, match="."):
        shell.loading(server, "no/such-model")
    assert shell.zero_shot_visible(True) == {"zs_on": "on"}


def test_a_link_to_an_uploaded_animation_says_its_model_sees_frame_1_only(server):
    """A ?photo= link wrote the status line without the upload's note of its file (an animation: frame 1 only),
    which the upload itself and a model change say (a walk-through)."""
    from make_inputs import make_all

    sha1 = server.wb.add_photo(make_all()["animated.gif"])  # 2 frames
    got = shell.open_link(server, _request({"photo": sha1}))
    assert "An animation of 2 frames: the model sees frame 1 only." in got["status"], got["status"]
