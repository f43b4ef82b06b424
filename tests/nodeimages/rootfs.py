"""The images' root filesystems: a small userland from Debian packages (static busybox with a link per applet,
static bash as /bin/bash, GNU cp, find and tar with the libraries they link), then each image's own files on top."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from kdsim.images import base_files
from tests.nodeimages.debs import Package
from tests.nodeimages.facts import ImageFacts
from tests.nodeimages.hello import add_program
from tests.nodeimages.layer import Tree

# GNU tools put in /bin in place of busybox's (see debs.PACKAGES for why): package -> its path of the tool
GNU_TOOLS = {"coreutils": "bin/cp", "findutils": "usr/bin/find", "tar": "bin/tar"}
LIB_PACKAGES = ("libc6", "libacl1", "libattr1", "libselinux1", "libpcre2-8-0")  # what the GNU tools link
LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64")
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def applets(busybox: Package) -> list[str]:
    """The applets of the packaged busybox, as it lists them itself (sorted)."""
    done = subprocess.run([str(busybox.root / "bin/busybox"), "--list"], capture_output=True, text=True, timeout=30, check=True)
    return sorted(done.stdout.split())


def userland(packages: Mapping[str, Package], ref: str) -> Tree:
    """The base tree: /bin/busybox and its applets, /bin/bash, GNU cp, find and tar, shared libraries, /etc, /tmp."""
    tree = Tree()
    for d, mode in (("/tmp", 0o1777), ("/var/tmp", 0o1777), ("/root", 0o700)):
        tree.dir(d, mode)
    for d in ("/dev", "/proc", "/sys", "/run", "/mnt", "/home", "/var/log", "/usr/bin", "/usr/sbin", "/sbin"):
        tree.dir(d)
    busybox = packages["busybox-static"]
    tree.copy_from(busybox.root, "bin/busybox", "/bin/busybox")
    for name in applets(busybox):
        if name != "busybox":
            tree.symlink(f"/bin/{name}", "busybox")
    tree.copy_from(packages["bash-static"].root, "bin/bash-static", "/bin/bash")
    # /bin/sh is bash, as on the CentOS images KubeDirector's catalog uses: busybox's ash runs its own applets before
    # anything on PATH, so `/bin/sh -c` scripts (gitops-kd's init container) would get busybox's find and tar.
    tree.symlink("/bin/sh", "bash")
    for package, tool in GNU_TOOLS.items():
        tree.copy_from(packages[package].root, tool, f"/bin/{tool.rsplit('/', 1)[-1]}")
    for name in LIB_PACKAGES:
        root = packages[name].root
        for lib_dir in LIB_DIRS:
            folder = root / lib_dir
            if not folder.is_dir():
                continue
            for child in sorted(folder.iterdir(), key=lambda p: p.name):
                if ".so" in child.name and (child.is_symlink() or child.is_file()):
                    tree.copy_from(root, f"{lib_dir}/{child.name}", f"/{lib_dir}/{child.name}")
    tree.file("/etc/passwd", PASSWD)
    tree.file("/etc/group", GROUP)
    for path, data in base_files(ref).items():  # /etc/os-release and /etc/image-ref, as the simulated images
        tree.file(path, data)
    return tree


def hello_tree(packages: Mapping[str, Package], image: ImageFacts) -> Tree:
    """A hello image: the userland, the version's files (those of the simulated image), the program."""
    tree = userland(packages, image.ref)
    for path, content in image.files.items():
        tree.file(path, content)
    add_program(tree, image)
    return tree


def pause_tree(pause_program: bytes, packages: Mapping[str, Package], image: ImageFacts) -> Tree:
    """The sandbox image: just its program (a static binary, or a busybox script beside busybox)."""
    tree = Tree()
    tree.dir("/tmp", 0o1777)
    if pause_program.startswith(b"#!"):
        tree.copy_from(packages["busybox-static"].root, "bin/busybox", "/bin/busybox")
        for name in ("sh", "sleep"):
            tree.symlink(f"/bin/{name}", "busybox")
    tree.file(image.entrypoint[0], pause_program, mode=0o755)
    return tree
