"""Two vizvit servers on one machine given one Gradio folder (GRADIO_TEMP_DIR, else <tmp>/gradio), as
replicas or two models on two ports are, each file their photos in a folder of their own
(launch.own_upload_folder): Gradio names a file's folder by a hash of its bytes, writes and deletes
there as it likes (each server deletes, as it closes and every 10 minutes, the files it made), and two
replicas sharing one folder once gave 8 of 20 students "The file could not be read" (deploy/README.md).
deploy/cluster.py gave each replica its own folder; now the app does, whoever starts it."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
from tiny import ROOT, make_tiny_vit

sys.path[:0] = [str(ROOT / "deploy")]
import cluster  # noqa: E402 - free_port, wait_http


def test_two_servers_given_one_folder_each_file_their_examples_apart(tmp_path):
    model_dir = make_tiny_vit(tmp_path / "tiny", 224, 16)
    shared = tmp_path / "files"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "VIZVIT_THREADS": "1",
           "GRADIO_TEMP_DIR": str(shared)}
    ports = [cluster.free_port(), cluster.free_port()]
    servers = [subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--model", str(model_dir), "--device", "cpu",
                                 "--host", "127.0.0.1", "--port", str(port),
                                 "--rooms-db", str(tmp_path / f"rooms{k}.sqlite3")],
                                env=env, cwd=ROOT, stdout=open(tmp_path / f"server{k}.log", "w"),
                                stderr=subprocess.STDOUT) for k, port in enumerate(ports)]
    try:
        for k, (port, server) in enumerate(zip(ports, servers)):
            cluster.wait_http(f"http://127.0.0.1:{port}/", server, f"server {k} (log: {tmp_path}/server{k}.log)")
        cats = sorted(shared.rglob("chelsea.jpg"))  # each server's Examples, filed as it started
        assert len(cats) == 2 and {c.relative_to(shared).parts[0] for c in cats} == {f"vizvit-{p}" for p in ports}, cats
        for port in ports:  # and each serves its own: the file a click on the example puts in the box
            (cat,) = (shared / f"vizvit-{port}").rglob("chelsea.jpg")
            assert httpx.get(f"http://127.0.0.1:{port}/gradio_api/file={cat}", timeout=60).status_code == 200
    finally:
        for server in servers:
            server.kill()
            server.wait()
