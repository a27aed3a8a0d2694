"""A local stand-in for the Hugging Face hub: the requests huggingface_hub makes for a dataset repo.

``huggingface_hub`` (2.x) lists a dataset with ``GET /api/datasets/<repo>/tree/<revision>?recursive=True``
(pages linked by a ``Link: <...>; rel="next"`` header) and downloads a file with ``HEAD`` then
``GET /datasets/<repo>/resolve/<revision>/<path>``, reading the commit from ``X-Repo-Commit``, the
file's identity from ``ETag`` and its size from ``Content-Length``; a model repo (a tokenizer, say) is
the same without the ``datasets`` prefix (``/api/models/<repo>/tree/...``, ``/<repo>/resolve/...``).
This server answers exactly those from dicts of files held in memory, on 127.0.0.1 in a thread, records every request, and answers
anything else with 404 (so a test sees a request it did not expect). Point ``HF_ENDPOINT`` at
:attr:`HubServer.endpoint`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PAGE = 3  # entries per page of a listing (the hub's is 1000): the client must follow the pages


class HubServer:
    """Serves ``repos`` ({"owner/name": {path in repo: bytes}}) as hub datasets and ``models`` as
    model repos until :meth:`close`."""

    def __init__(self, repos: dict[str, dict[str, bytes]], models: dict[str, dict[str, bytes]] | None = None):
        self.repos = repos
        self.models = models or {}
        self.requests: list[tuple[str, str]] = []
        handler = type("Handler", (_Handler,), {"hub": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def downloads(self) -> list[str]:
        """The dataset paths downloaded (GET of a resolve URL), in order."""
        return [
            path.split("/resolve/", 1)[1].split("/", 1)[1]
            for method, path in self.requests
            if method == "GET" and path.startswith("/datasets/") and "/resolve/" in path
        ]

    def model_downloads(self) -> list[str]:
        """The model repo paths downloaded (GET of a resolve URL outside the datasets), in order."""
        return [
            path.split("/resolve/", 1)[1].split("/", 1)[1]
            for method, path in self.requests
            if method == "GET" and not path.startswith(("/datasets/", "/api/")) and "/resolve/" in path
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tree_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its path relative to it (a repo's contents)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub.requests.append((self.command, path))
        if path.startswith("/api/datasets/") and "/tree/" in path:
            repo, rest = path[len("/api/datasets/") :].split("/tree/", 1)
            return self._listing(repo, rest, parse_qs(url.query))
        if path.startswith("/datasets/") and "/resolve/" in path:
            repo, rest = path[len("/datasets/") :].split("/resolve/", 1)
            return self._file(repo, rest.split("/", 1)[1] if "/" in rest else "", body=body)
        if path.startswith("/api/models/") and "/tree/" in path:
            repo, rest = path[len("/api/models/") :].split("/tree/", 1)
            return self._listing(repo, rest, parse_qs(url.query), self.hub.models, kind="models")
        if "/resolve/" in path and not path.startswith("/api/"):
            repo, rest = path[1:].split("/resolve/", 1)
            return self._file(repo, rest.split("/", 1)[1] if "/" in rest else "", body=body, repos=self.hub.models)
        self._send(404, b'{"error": "not a request this stand-in answers"}')

    def _listing(self, repo: str, rest: str, query: dict, repos=None, kind: str = "datasets") -> None:
        files = (self.hub.repos if repos is None else repos).get(repo)
        if files is None:
            return self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})
        entries = _entries(files, recursive=query.get("recursive", ["False"])[0] in ("True", "true", "1"))
        folder = rest.split("/", 1)[1].strip("/") if "/" in rest else ""  # a listing of one folder
        if folder:
            entries = [e for e in _entries(files, recursive=True) if e["path"].startswith(folder + "/")]
            if not entries:
                return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"})
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start : start + PAGE]
        headers = {"Content-Type": "application/json"}
        if start + PAGE < len(entries):
            revision = rest.split("/", 1)[0]
            nxt = f"{self.hub.endpoint}/api/{kind}/{repo}/tree/{revision}?recursive=True&expand=False&cursor={start + PAGE}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._send(200, json.dumps(page).encode(), headers)

    def _file(self, repo: str, name: str, *, body: bool, repos=None) -> None:
        content = (self.hub.repos if repos is None else repos).get(repo, {}).get(name)
        if content is None:
            return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"})
        etag = hashlib.sha256(content).hexdigest()
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"', "Content-Type": "application/octet-stream"}
        self._send(200, content if body else b"", headers, length=len(content))

    def _send(self, status: int, payload: bytes, headers: dict | None = None, length: int | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload) if length is None else length))
        self.end_headers()
        if payload:
            self.wfile.write(payload)


def _entries(files: dict[str, bytes], *, recursive: bool) -> list[dict]:
    """The hub's listing entries: folders and files (with size and a blob id), in path order."""
    folders = sorted({"/".join(name.split("/")[:i]) for name in files for i in range(1, name.count("/") + 1)})
    entries = [{"type": "directory", "oid": COMMIT, "path": folder} for folder in folders]
    entries += [
        {"type": "file", "oid": hashlib.sha1(content).hexdigest(), "size": len(content), "path": name}
        for name, content in files.items()
    ]
    if not recursive:
        entries = [entry for entry in entries if "/" not in entry["path"]]
    return sorted(entries, key=lambda entry: entry["path"])
