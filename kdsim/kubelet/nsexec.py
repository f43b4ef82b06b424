"""Stand-alone entry run as `python -I -S nsexec.py SPEC_FILE`: enter a private mount namespace, mount, chroot, exec.

Kept free of package imports so it starts fast. SPEC: {"rootfs", "binds": [[src, dst, readonly], ...],
"symlinks": [[target, path], ...], "proc": bool, "hostname": str, "workdir": str, "env": {...}, "argv": [...]}.
The spec file is deleted once read. Exit code 127 when the command is not found, 126 when it cannot be executed,
125 on a setup failure.
"""

import ctypes
import json
import os
import sys

CLONE_NEWNS, CLONE_NEWUTS = 0x00020000, 0x04000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
_HOST_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "sys")


def _fail(message: str, code: int = 125) -> None:
    sys.stderr.write(f"sim-runtime: {message}\n")
    sys.stderr.flush()
    os._exit(code)


def _mount(libc: ctypes.CDLL, src: str | None, dst: str, fstype: str | None, flags: int) -> int:
    rc = libc.mount(src and src.encode(), dst.encode(), fstype and fstype.encode(), flags, None)
    return 0 if rc == 0 else ctypes.get_errno()


def main() -> None:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    try:
        os.unlink(sys.argv[1])
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        _fail(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
    if _mount(libc, "none", "/", None, MS_REC | MS_PRIVATE):
        _fail("cannot make / private")
    for target, path in spec.get("symlinks", []):
        if not os.path.lexists(path):
            os.symlink(target, path)
    # Parents before children (a stable sort by depth, as container runtimes order mounts); a mountpoint
    # hidden by a parent volume (/run/lock inside a /run volume) is made inside that volume, and read-only
    # remounts come last so such mountpoints can still be made. Never inside a bound host directory.
    binds = sorted(spec["binds"], key=lambda b: os.path.normpath(b[1]).count("/"))
    host_dsts = [dst for src, dst, _ in binds if src.split("/")[1:2][0] in _HOST_DIRS]
    for src, dst, _ in binds:
        if not os.path.lexists(dst):
            if any(dst.startswith(h.rstrip("/") + "/") for h in host_dsts):
                _fail(f"mountpoint {dst}: inside a host directory")
            try:
                if os.path.isdir(src):
                    os.makedirs(dst, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    open(dst, "a").close()
            except OSError as exc:
                _fail(f"mountpoint {dst}: {exc.strerror}")
        err = _mount(libc, src, dst, None, MS_BIND | MS_REC)
        if err:
            _fail(f"bind {src} -> {dst}: {os.strerror(err)}")
    for _, dst, readonly in binds:
        if readonly:
            _mount(libc, None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    if spec.get("proc"):
        _mount(libc, "proc", os.path.join(spec["rootfs"], "proc"), "proc", 0)
    if spec.get("hostname") and libc.unshare(CLONE_NEWUTS) == 0:
        name = spec["hostname"].encode()
        libc.sethostname(name, len(name))
    os.chroot(spec["rootfs"])
    try:
        os.chdir(spec.get("workdir") or "/")
    except OSError as exc:
        _fail(f"chdir to {spec.get('workdir')}: {exc.strerror}", 128)
    argv, env = spec["argv"], spec["env"]
    if "/" in argv[0]:
        candidates = [argv[0]]
    else:
        path = env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        candidates = [os.path.join(d or ".", argv[0]) for d in path.split(":")]
    found = [c for c in candidates if os.path.isfile(c)]
    if not found:
        _fail(f'exec: "{argv[0]}": executable file not found in $PATH', 127)
    try:
        os.execve(found[0], argv, env)
    except PermissionError:
        _fail(f'exec: "{argv[0]}": permission denied', 126)
    except OSError as exc:
        _fail(f'exec: "{argv[0]}": {exc.strerror}', 126)


if __name__ == "__main__":
    main()
