"""The hello program of one version, a shell script: it reads its persisted data, records its start in its cache,
serves its version over HTTP (busybox httpd) on each port its KDApp declares, and exits 0 on SIGTERM or SIGINT.

HTTP: `/` answers `hello <version>`; `/cgi-bin/data` the version and each file of /var/lib/hello (`name: content`);
`/cgi-bin/note?TEXT` appends TEXT to /var/lib/hello/notes. Exit 1 at start when /var/lib/hello/data cannot be
read (the persisted data is missing) or /opt/hello/cache cannot be written, and when every server has exited.
"""

from __future__ import annotations

from tests.nodeimages.facts import HELLO_PORTS_ENV, HELLO_PROGRAM, HELLO_WWW, ImageFacts
from tests.nodeimages.layer import Tree

DATA_DIR = "/var/lib/hello"
DATA_FILE = f"{DATA_DIR}/data"
CACHE_DIR = "/opt/hello/cache"
STARTED_BY = f"{CACHE_DIR}/started-by"  # the version that last started, rewritten at each start
NOTES = f"{DATA_DIR}/notes"

PROGRAM = """#!/bin/sh
# hello {version}: gitops-kd's test app (tests/nodeimages/hello.py). Serves its version until SIGTERM/SIGINT.
VERSION={version}
PORTS="${{{ports_env}:-{ports}}}"
PIDS=
trap 'kill $PIDS 2>/dev/null; exit 0' TERM INT
data=$(cat {data_file}) || {{ echo "hello $VERSION: cannot read {data_file}: its persisted data is missing" >&2; exit 1; }}
echo "$VERSION" > {started_by} || {{ echo "hello $VERSION: cannot write {started_by}" >&2; exit 1; }}
for port in $PORTS; do
  httpd -f -p "$port" -h {www} &
  PIDS="$PIDS $!"
done
echo "hello $VERSION: serving on port(s) $PORTS; {data_file}: $data"
wait
echo "hello $VERSION: every server exited" >&2
exit 1
"""
DATA_CGI = """#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
echo "hello {version}"
for f in {data_dir}/*; do
  [ -f "$f" ] && printf '%s: %s\\n' "${{f##*/}}" "$(cat "$f")"
done
exit 0
"""
NOTE_CGI = """#!/bin/sh
if echo "$QUERY_STRING" >> {notes}; then
  printf 'Content-Type: text/plain\\r\\n\\r\\nnoted\\n'
else
  printf 'Status: 500\\r\\nContent-Type: text/plain\\r\\n\\r\\ncannot write {notes}\\n'
fi
"""


def add_program(tree: Tree, image: ImageFacts) -> None:
    """Put the program, its HTTP root and CGI scripts for ``image`` into ``tree`` (after the image's files)."""
    ports = " ".join(str(p) for p in image.ports)
    fields = {
        "version": image.version,
        "ports": ports,
        "ports_env": HELLO_PORTS_ENV,
        "data_file": DATA_FILE,
        "data_dir": DATA_DIR,
        "started_by": STARTED_BY,
        "notes": NOTES,
        "www": HELLO_WWW,
    }
    tree.file(HELLO_PROGRAM, PROGRAM.format(**fields), mode=0o755)
    tree.file(f"{HELLO_WWW}/index.html", f"hello {image.version}\n")
    tree.file(f"{HELLO_WWW}/cgi-bin/data", DATA_CGI.format(**fields), mode=0o755)
    tree.file(f"{HELLO_WWW}/cgi-bin/note", NOTE_CGI.format(**fields), mode=0o755)
