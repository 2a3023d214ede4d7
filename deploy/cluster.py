"""N vizvit replicas behind one nginx, each student sticky to one replica (issue 42), their live
rooms in one Redis (issue 50): every replica sees every room.

    python deploy/cluster.py --replicas 2 --port 8080 --model ../shared/models/vit-tiny-augreg
    python deploy/cluster.py --replicas 4 --host 127.0.0.1 --port 8080 -- --cache-mb 2048

Starts a redis-server (a free loopback port, its own folder; the rooms' store, given to every replica
as VIZVIT_REDIS_URL), the replicas (`app.py`, each on a free loopback port, in its own process, with
VIZVIT_PROXY_HOPS=1: nginx appends the student's address to X-Forwarded-For), renders
deploy/nginx.conf.in into a fresh folder (config, pid, logs and nginx's temp files all there) and
runs nginx in the foreground on HOST:PORT until Ctrl-C, then stops everything it started.
Arguments after `--` go to every app.py. See deploy/README.md.

The test (tests/system/test_deploy.py) and the hall benchmark use Cluster from here.
"""

from __future__ import annotations

import argparse
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.in"
COOKIE = "vizvit_replica"
REPLICA_HEADER = "X-Vizvit-Replica"  # nginx names the replica that answered (its address)
MAX_BODY = "21m"  # app.MAX_FILE_SIZE (20 MB) plus the multipart envelope
NGINX_CANDIDATES = ("nginx", "/usr/sbin/nginx")
REDIS_CANDIDATES = ("redis-server", "/usr/bin/redis-server")


def find_redis() -> str | None:
    """The redis-server binary, or None where it is not installed."""
    for name in REDIS_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def start_redis(binary: str, folder: Path, port: int) -> subprocess.Popen:
    """redis-server on 127.0.0.1:port, its files (append-only log: the rooms outlive a Redis restart
    too) in `folder`; returns once it answers PING."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
                             "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                             "--logfile", str(folder / "redis.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with code {proc.returncode} (log: {folder}/redis.log)")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer on port {port} in 30 s")


def find_nginx() -> str | None:
    """The nginx binary, or None where it is not installed."""
    for name in NGINX_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_user() -> str:
    """nginx's `user` line: as root, nginx drops its workers to a user; Debian has no group
    "nobody" (nginx's default), so name nobody:nogroup. As anyone else nginx ignores it: none."""
    if os.geteuid() != 0:
        return ""
    try:
        pwd.getpwnam("nobody"), grp.getgrnam("nogroup")
    except KeyError:
        return ""
    return "user nobody nogroup;"


def others_can_enter(path: Path) -> bool:
    """Whether a user other than the owner can reach files under `path` (every folder up to / has o+x)."""
    return all(p.stat().st_mode & 0o001 for p in [path.resolve(), *path.resolve().parents])


def render(listen: str, replicas: Sequence[str], folder: Path, workers: int = 1,
           cookie: str = COOKIE, max_body: str = MAX_BODY, temp: Path | None = None) -> str:
    """nginx.conf for `replicas` ("host:port" each) behind `listen` ("host:port"), every path
    nginx writes under `folder` (its workers' temp files under `temp`, default `folder`).
    Raises ValueError for no replica or an odd cookie name."""
    if not replicas:
        raise ValueError("at least one replica is needed")
    if not cookie.replace("_", "").isalnum():
        raise ValueError(f"cookie name {cookie!r}: letters, digits and _ only (nginx names it $cookie_{cookie})")
    servers = "\n".join(f"        server {r} max_fails=1 fail_timeout=10s;" for r in replicas)
    text = TEMPLATE.read_text()
    for name, value in (("SERVERS", servers), ("LISTEN", listen), ("DIR", str(folder)), ("TEMP", str(temp or folder)),
                        ("WORKERS", str(workers)), ("COOKIE", cookie), ("MAX_BODY", max_body)):
        text = text.replace(f"@{name}@", value)
    user = worker_user()
    return f"{user}\n{text}" if user else text


def wait_http(url: str, proc: subprocess.Popen, what: str, timeout: float = 300.0) -> None:
    """Until `url` answers (any HTTP status); RuntimeError if `proc` exits or time runs out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer {url} in {timeout:.0f} s")


@dataclass
class Cluster:
    """`n` app.py replicas on free loopback ports and nginx in front, in `folder` (a fresh temp
    dir by default). Use as a context manager, or start() / stop()."""

    model: str
    n: int = 2
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free one
    app_args: Sequence[str] = ()
    folder: Path | None = None
    nginx: str | None = None
    workers: int = 1
    replicas: list[subprocess.Popen] = field(default_factory=list)
    _env: dict = field(default_factory=dict, repr=False)
    replica_ports: list[int] = field(default_factory=list)
    proxy: subprocess.Popen | None = None
    redis: subprocess.Popen | None = None
    redis_url: str = ""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.replica_ports[i]}/"

    def replica_address(self, i: int) -> str:
        """How nginx names replica i (its X-Vizvit-Replica header)."""
        return f"127.0.0.1:{self.replica_ports[i]}"

    def start(self) -> Cluster:
        self.nginx = self.nginx or find_nginx()
        if self.nginx is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="vizvit-deploy-"))
            self.folder.chmod(0o755)
        self.folder = Path(self.folder)
        # As root, nginx's workers run as nobody and write uploads to temp files: somewhere they can reach.
        temp = self.folder
        if worker_user() and not others_can_enter(self.folder):
            temp = Path(tempfile.mkdtemp(prefix="vizvit-nginx-temp-"))
            temp.chmod(0o755)
        self.port = self.port or free_port()
        redis_bin = find_redis()
        if redis_bin is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server): "
                               "the replicas keep their live rooms in it")
        # The machine's cores shared out: each replica's torch would otherwise take them all
        # (vizvit.service.threads), and N replicas' forwards would fight over them (VIZVIT_THREADS wins).
        share = str(max(1, len(os.sched_getaffinity(0)) // self.n))
        redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{redis_port}/0"
        # One proxy in front: each replica reads the student's address from X-Forwarded-For (rooms per
        # address, the costly jobs' fair share), never nginx's own loopback address.
        env = self._env = {**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
                           "GRADIO_ANALYTICS_ENABLED": "False",
                           "VIZVIT_THREADS": os.environ.get("VIZVIT_THREADS") or share,
                           "VIZVIT_REDIS_URL": self.redis_url, "VIZVIT_PROXY_HOPS": "1"}
        try:
            self.redis = start_redis(redis_bin, self.folder / "redis", redis_port)
            for i in range(self.n):
                port = free_port()
                log = open(self.folder / f"replica{i}.log", "w")  # a file, not a pipe: a full pipe stalls a server
                cmd = [sys.executable, str(ROOT / "app.py"), "--model", self.model, "--host", "127.0.0.1",
                       "--port", str(port), *self.app_args]
                # Each its own Gradio upload folder: in a shared one (/tmp/gradio), two replicas given
                # the same photo at once write the same file, and one reads it half written ("The
                # file could not be read": 8 of 20 example students in a hall through nginx).
                own = {**env, "GRADIO_TEMP_DIR": str(self.folder / f"replica{i}-files")}
                self.replicas.append(subprocess.Popen(cmd, env=own, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
                self.replica_ports.append(port)
            for i, proc in enumerate(self.replicas):  # they load their models side by side
                wait_http(self.replica_url(i), proc, f"replica {i} (log: {self.folder}/replica{i}.log)")
            conf = self.folder / "nginx.conf"
            conf.write_text(render(f"{self.host}:{self.port}", [self.replica_address(i) for i in range(self.n)],
                                   self.folder, self.workers, temp=temp))
            base = [self.nginx, "-p", str(self.folder), "-c", str(conf), "-e", str(self.folder / "error.log")]
            check = subprocess.run([*base, "-t", "-q"], capture_output=True, text=True)
            if check.returncode != 0:
                raise RuntimeError(f"nginx refused the config: {check.stderr.strip()}")
            self.proxy = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_http(self.url, self.proxy, f"nginx (log: {self.folder}/error.log)", timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, i: int) -> None:
        """Start replica i again on its port (nginx's config names ports): its students reconnect."""
        if self.replicas[i].poll() is None:
            return
        log = open(self.folder / f"replica{i}.log", "a")
        env = {**self._env, "GRADIO_TEMP_DIR": str(self.folder / f"replica{i}-files")}
        self.replicas[i] = subprocess.Popen(self.replicas[i].args, env=env, cwd=ROOT, stdout=log,
                                            stderr=subprocess.STDOUT)

    def kill(self, i: int) -> None:
        """Replica i dies at once (SIGKILL: no goodbye to its students), as a crashed machine would."""
        self.replicas[i].kill()
        self.replicas[i].wait()

    def log(self, i: int, tail: int = 3000) -> str:
        return (self.folder / f"replica{i}.log").read_text()[-tail:] if self.folder else ""

    def stop(self) -> None:
        # Redis last: a replica stopping still reads it
        for group in ([self.proxy, *self.replicas], [self.redis]):
            procs = [p for p in group if p is not None and p.poll() is None]
            for p in procs:
                p.send_signal(signal.SIGTERM)  # nginx: fast shutdown; app.py: Gradio closes; redis: exits
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    app_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, app_args = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("VIZVIT_MODEL", "google/vit-base-patch16-224"))
    ap.add_argument("--replicas", type=int, default=2,
                    help="app processes (about one per 2 cores, see deploy/README.md)")
    ap.add_argument("--host", default="127.0.0.1", help="where nginx listens (0.0.0.0: every interface)")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--workers", type=int, default=1, help="nginx worker processes")
    ap.add_argument("--folder", type=Path, default=None, help="config, logs and temp files (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.replicas < 1:
        ap.error("--replicas must be at least 1")
    cluster = Cluster(args.model, args.replicas, args.host, args.port, app_args, args.folder, workers=args.workers)
    try:
        cluster.start()
    except RuntimeError as e:
        print(f"could not start: {e}", file=sys.stderr)
        return 1
    print(f"{args.replicas} replicas ({', '.join(cluster.replica_address(i) for i in range(cluster.n))}) "
          f"behind nginx on {cluster.url}, live rooms in Redis at {cluster.redis_url}; logs in {cluster.folder}. "
          "Ctrl-C stops all.", flush=True)
    try:
        # A replica that dies is started again (its students' rooms go on on another replica, their
        # Gradio events say "reload the page"); nginx or Redis dying ends the run.
        while cluster.proxy.poll() is None and cluster.redis is not None and cluster.redis.poll() is None:
            for i, p in enumerate(cluster.replicas):
                if p.poll() is not None:
                    print(f"replica {i} exited ({p.returncode}): starting it again", file=sys.stderr, flush=True)
                    cluster.restart(i)
            time.sleep(1)
        print("nginx or redis-server exited; stopping the replicas", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
