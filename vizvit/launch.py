"""Where the server listens: command line, then Gradio's environment, then defaults.

Hugging Face Spaces sets GRADIO_SERVER_NAME=0.0.0.0 and routes traffic to port 7860;
a server that binds 127.0.0.1 there is unreachable. So a Space (SPACE_ID set) always
binds 0.0.0.0:7860; elsewhere flags win, then GRADIO_SERVER_NAME / GRADIO_SERVER_PORT,
then PORT (container hosts: Cloud Run, Render, Heroku, Railway), then 127.0.0.1:7860 (local only,
the safe default on a laptop).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import tempfile
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from vizvit.errors import UserError
from vizvit.model.catalog import OFFLINE_FALLBACK
from vizvit.model.models import RANDOM_PREFIX, is_local_path

if TYPE_CHECKING:
    from vizvit.session import Workbench

log = logging.getLogger("vizvit.app")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
SPACE_ADDRESS = ("0.0.0.0", 7860)
ANY_INTERFACE = "0.0.0.0"


def on_space(env: Mapping[str, str]) -> bool:
    return bool(env.get("SPACE_ID"))


def server_address(host: str | None, port: int | None, env: Mapping[str, str]) -> tuple[str, int]:
    """(host, port) to bind. host/port: the command-line flags, None when not given."""
    if on_space(env):
        return SPACE_ADDRESS
    # A container host routes its traffic to $PORT from outside the container: a server bound to
    # 127.0.0.1 there is unreachable (the page never loads), so PORT alone also means every interface.
    container = port is None and not env.get("GRADIO_SERVER_PORT") and bool(env.get("PORT"))
    host = host or env.get("GRADIO_SERVER_NAME") or (ANY_INTERFACE if container else DEFAULT_HOST)
    if port is None:
        name = "PORT" if container else "GRADIO_SERVER_PORT"
        raw = env.get(name)
        try:
            port = int(raw) if raw else DEFAULT_PORT
        except ValueError:
            raise UserError(f"{name}={raw!r} is not a port number.") from None
    if not 0 < port < 65536:
        raise UserError(f"Port {port} is out of range (1..65535).")
    return host, port


def own_upload_folder(port: int, env: MutableMapping[str, str]) -> str:
    """Gradio's upload folder for this server alone: `vizvit-<port>` inside GRADIO_TEMP_DIR (else
    <tmp>/gradio), written back to env["GRADIO_TEMP_DIR"], where Gradio reads it as it files each
    upload and caches each example. Gradio names a file's folder by a hash of its bytes and a server
    that closes deletes the files it made: two servers on one machine (replicas, or two models on
    two ports) sharing a folder deleted each other's copy of the same photo, and a click on an
    example then found no file ("The file could not be read"). The port keeps it the same folder
    across restarts; servers on one machine listen on distinct ports (containers that share a mounted
    folder and all listen on 7860 still share it: give each its own GRADIO_TEMP_DIR, as
    deploy/cluster.py does). Returns the folder."""
    base = Path(env.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")
    own = f"vizvit-{port}"
    folder = str(base if base.name == own else base / own)  # already set by an earlier call
    env["GRADIO_TEMP_DIR"] = folder
    return folder


WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")


@dataclass(frozen=True)
class Start:
    """The model the page starts with, and when it is a stand-in, which one failed and why."""

    model: str  # the model loaded: the one asked for, or its stand-in
    failed: str | None = None  # the model asked for, when it could not be loaded
    reason: str = ""  # why, in a few plain words (no path, no exception name): fits "(...)"


def load_problem(source: str) -> str:
    """Why a checkpoint did not load, in plain words, read from the checkpoint itself (the loader's
    exception names a path and an exception class, not what to fix). `source`: a local directory
    or a hub id."""
    if not is_local_path(source):
        return "no internet connection here, or the hub has no such model"
    folder = Path(source)
    if not folder.is_dir():
        return "its folder does not exist"
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except OSError:
        return "its folder has no readable config.json"
    except ValueError:
        return "its config.json is not valid JSON"
    weights = [folder / w for w in WEIGHT_FILES if (folder / w).is_file()]
    if not weights:
        return "its folder holds no weights file (model.safetensors)"
    if weights[0].suffix == ".safetensors":
        try:
            from safetensors import safe_open

            with safe_open(str(weights[0]), framework="pt") as f:
                for name in f.keys():  # reading every tensor finds a file cut short
                    f.get_tensor(name)
        except Exception:  # noqa: BLE001 - any failure to read it is "damaged" to a lecturer
            return f"its weights file {weights[0].name} is damaged or incomplete"
    return "its files are not a ViT checkpoint this page can read"


def start(wb: Workbench, name: str) -> Start:
    """Load the requested model. When it cannot be had (offline, broken files), fall back to the
    same architecture with random weights when its config says which (a local ViT-Ti: random
    ViT-Ti), else to the default random ViT-B/16; the page's banner says which model failed and
    why (Start), the log says it too, with the loader's own words."""
    try:
        wb.model(name)
        return Start(name)
    except ValueError as e:
        if name.startswith(RANDOM_PREFIX):
            raise
        catalog = wb.catalog
        source = catalog.source(name) if catalog is not None else name
        twin = catalog.twin_of(name) if catalog is not None else None
        fallback = twin or OFFLINE_FALLBACK
        reason = load_problem(source)
        log.warning("Could not load %s: %s (%s). Showing %s (untrained random weights) instead.",
                    name, reason, e, fallback)
        wb.model(fallback)
        return Start(fallback, name, reason)


def start_model(wb: Workbench, name: str) -> str:
    """The model start() loads: the requested one, or its random-weights stand-in."""
    return start(wb, name).model


# ------------------------------------------------------------------ the address a phone can open
@dataclass(frozen=True)
class PhoneAddress:
    """The page's address for a QR code or a link handed to phones, and what the page says about it."""

    base: str  # "http(s)://host[:port]/path/", with a trailing slash, no query
    note: str  # markdown for the QR panel: "" when the page's own address is fine for phones
    reachable: bool  # False: the address works on this computer only (the note says how to fix it)


ANY_HOST = ("0.0.0.0", "::", "")  # listen on every interface


def is_loopback(host: str) -> bool:
    """localhost, 127.x.y.z, ::1 (a name other than localhost: not loopback, a network name)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _with_host(url: str, host: str) -> str:
    u = urlsplit(url)
    netloc = f"[{host}]" if ":" in host else host
    return urlunsplit((u.scheme, f"{netloc}:{u.port}" if u.port else netloc, u.path or "/", "", ""))


def phone_address(page_url: str, listen_host: str | None, share_url: str | None = None,
                  space_host: str | None = None, lan: str | None = None) -> PhoneAddress:
    """Where a phone in the room can open this page. page_url: the address the lecturer's browser used
    (e.g. http://127.0.0.1:7860/); listen_host: the address the server binds (--host); share_url:
    Gradio's public --share link; space_host: SPACE_HOST on a Hugging Face Space; lan: this machine's
    address on the local network (lan_address). A loopback page address works on this computer only:
    then a Space's address, the share link, or (when the server listens on every interface or on a
    network address) the machine's LAN address is used instead, and the note says so; with none of
    these the note says that no phone can open it and how to start the server so one can."""
    base = urlunsplit(urlsplit(page_url)[:3] + ("", "")) or page_url
    base = base if base.endswith("/") else base + "/"
    # A Space's page may be seen through its hub page (huggingface.co/spaces/...): its own host.
    if space_host:
        return PhoneAddress(f"https://{space_host.strip('/')}/", "", True)
    page_host = urlsplit(base).hostname or ""
    if not is_loopback(page_host):
        return PhoneAddress(base, "", True)
    here = f"This page's address (**{page_host}**) opens on this computer only"
    if share_url:
        share = share_url if share_url.endswith("/") else share_url + "/"
        return PhoneAddress(share, f"{here}: the QR code and link use the public `--share` address.", True)
    host = (listen_host or "").strip("[]")
    if host not in ANY_HOST and not is_loopback(host):
        return PhoneAddress(_with_host(base, host), f"{here}: the QR code and link use the address the "
                            f"server listens on, **{host}**.", True)
    if host in ANY_HOST and lan:
        return PhoneAddress(_with_host(base, lan), f"{here}: the QR code and link use this machine's "
                            f"address on the local network, **{lan}**: phones must be on the same network "
                            "(Wi-Fi).", True)
    how = ("start it with `--share` (a public link)" if host in ANY_HOST else
           "start the app with `--host 0.0.0.0` (phones on the same Wi-Fi) or `--share` (a public link)")
    return PhoneAddress(base, f"⚠️ {here}: **no phone can open this QR code.** To hand it to a room, {how}.",
                        False)


def lan_address() -> str | None:
    """This machine's address on its local network: the source address of a route outward (a UDP
    socket's connect sends nothing), or None without a network."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): only the route is asked, nothing is sent
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if is_loopback(ip) or ip.startswith("0.") else ip
