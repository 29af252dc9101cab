"""Packages for the package tests, and the servers that hand them out without the internet.

- ``make_package``: a folder with ``package.json``, a skill, a prompt template and an extension;
- ``GitHttpServer``: bare repositories over git's "dumb" HTTP protocol on 127.0.0.1 (port 0);
- ``npm_registry``: a minimal npm registry on 127.0.0.1 (port 0) serving the tarballs ``npm pack`` makes, so
  ``npm install`` runs for real against ``npm_config_registry``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.cli_sides import pi_command

TS_COMMAND_EXTENSION = """export default function (pi: any) {
  pi.registerCommand("%s", { description: "from %s", handler: async (args: string, ctx: any) => {
    ctx.ui.notify("hi " + args, "info"); } });
}
"""


def make_package(root: Path, name: str, *, skill: str = "hello", prompt: str = "rev",
                 ts_command: str | None = None, python_command: str | None = None,
                 pi: dict[str, Any] | None = None, version: str = "1.0.0") -> Path:
    """A conventional package; ``pi`` becomes the manifest object of package.json."""
    (root / "skills" / skill).mkdir(parents=True)
    (root / "skills" / skill / "SKILL.md").write_text(f"---\nname: {skill}\ndescription: Skill {skill} of {name}\n"
                                                      f"---\nDo {skill}.\n")
    (root / "prompts").mkdir()
    (root / "prompts" / f"{prompt}.md").write_text(f"---\ndescription: Prompt {prompt} of {name}\n---\nDo $1\n")
    manifest: dict[str, Any] = {"name": name, "version": version}
    if pi is not None:
        manifest["pi"] = pi
    (root / "package.json").write_text(json.dumps(manifest))
    if ts_command is not None or python_command is not None:
        (root / "extensions").mkdir()
    if ts_command is not None:
        (root / "extensions" / "ext.ts").write_text(TS_COMMAND_EXTENSION % (ts_command, name))
    if python_command is not None:
        (root / "extensions" / "ext.py").write_text(
            "def setup(pi):\n"
            f"    pi.register_command({python_command!r}, description='python from {name}',\n"
            "                        handler=lambda args, ctx: None)\n")
    return root


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def bare_repo(source: Path, served_root: Path, owner_repo: str, tag: str | None = "v1") -> Path:
    """``source`` committed (and tagged) and cloned bare to ``<served_root>/<owner_repo>.git``."""
    git("init", "-q", "-b", "main", cwd=source)
    git("add", "-A", cwd=source)
    git("commit", "-qm", "init", cwd=source)
    if tag:
        git("tag", tag, cwd=source)
    target = served_root / f"{owner_repo}.git"
    target.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", str(source), str(target), cwd=served_root)
    git("update-server-info", cwd=target)
    return target


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_directory(root: Path, handler: type[SimpleHTTPRequestHandler] = _QuietHandler) -> Iterator[str]:
    """``root`` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def npm_registry(packages: list[Path], work: Path) -> Iterator[str]:
    """A registry serving a tarball of each folder (packuments at ``/<name>``); yields its URL.
    Folders with one package name are its versions, the last one the ``latest`` tag."""
    files = work / "registry"
    files.mkdir()
    tarballs = [(json.loads((folder / "package.json").read_text()), pack(folder, files)) for folder in packages]
    with serve_directory(files) as url:
        packuments: dict[str, dict[str, Any]] = {}
        for manifest, tarball in tarballs:  # folders of one name are its versions; the last is latest
            data = tarball.read_bytes()
            version = manifest["version"]
            dist = {"tarball": f"{url}/{tarball.name}", "shasum": hashlib.sha1(data).hexdigest(),
                    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()}
            packument = packuments.setdefault(manifest["name"], {"name": manifest["name"], "versions": {}})
            packument["dist-tags"] = {"latest": version}
            packument["versions"][version] = {**manifest, "dist": dist}
        for name, packument in packuments.items():
            (files / name).write_text(json.dumps(packument))
        yield url


_UNPACKED = {".git", "node_modules"}


def pack(folder: Path, destination: Path) -> Path:
    """The tarball ``npm pack`` makes of ``folder`` (gzip, each file under ``package/``, mode 644,
    owner 0; no ``.git`` nor ``node_modules``), written here: a start of npm costs ~0.5 s of CPU."""
    manifest = json.loads((folder / "package.json").read_text())
    tarball = destination / f"{manifest['name'].lstrip('@').replace('/', '-')}-{manifest['version']}.tgz"
    with tarfile.open(tarball, "w:gz") as archive:
        files = (p for p in folder.rglob("*") if p.is_file() and not _UNPACKED & set(p.relative_to(folder).parts))
        for path in sorted(files):
            info = archive.gettarinfo(str(path), f"package/{path.relative_to(folder).as_posix()}")
            info.mode, info.uid, info.gid, info.uname, info.gname = 0o644, 0, 0, "", ""
            with path.open("rb") as handle:
                archive.addfile(info, handle)
    return tarball


def npm_env(env: dict[str, str], registry: str, cache: Path) -> dict[str, str]:
    return {**env, "npm_config_registry": registry, "npm_config_cache": str(cache), "npm_config_update_notifier": "false"}


def run_pi(kind: str, argv: list[str], env: dict[str, str], cwd: Path, stdin: str = "",
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command, env = pi_command(kind, argv, env)
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout, check=False)


def rpc_records(kind: str, argv: list[str], env: dict[str, str], cwd: Path,
                commands: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Every JSON record ``pi --mode rpc`` wrote for ``commands`` (stdin then closed), and its stderr."""
    done = run_pi(kind, ["--mode", "rpc", "--no-session", *argv], env, cwd,
                  "".join(json.dumps(c) + "\n" for c in commands))
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return records, done.stderr


def get_commands(kind: str, argv: list[str], env: dict[str, str], cwd: Path) -> tuple[list[dict[str, Any]], str]:
    records, stderr = rpc_records(kind, argv, env, cwd, [{"type": "get_commands", "id": "c"}])
    answer = next(r for r in records if r.get("id") == "c")
    return answer["data"]["commands"], stderr


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


PYTHON = sys.executable
