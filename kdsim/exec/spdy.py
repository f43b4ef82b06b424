"""Pure SPDY/3 framing as Kubernetes' streaming connections use it (`Upgrade: SPDY/3.1`, moby/spdystream).

A frame is 8 header bytes then its payload. Control frames: bit 31 set, 15-bit version (3), 16-bit type;
then 8-bit flags and a 24-bit length. Data frames: bit 31 clear, 31-bit stream id; then flags and length.
Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a 32-bit pair count, then length-prefixed names and values
(several values of one name joined by NUL), compressed with one zlib stream per direction for the whole
connection, primed with the SPDY/3 dictionary and sync-flushed after each block.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
HEADER_SIZE = 8
MAX_LENGTH = 0xFFFFFF
# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL, INTERNAL_ERROR = 1, 2, 3, 5, 6

# The SPDY/3 header dictionary: these words, each with a 32-bit length prefix, then the raw tail.
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language "
    "accept-ranges age allow authorization cache-control connection content-base content-encoding "
    "content-language content-length content-location content-md5 content-range content-type date etag "
    "expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since "
    "last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer "
    "retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
    "method get status 200_OK version HTTP/1.1 url public set-cookie keep-alive origin"
).split()
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.replace("_", " ").encode() for w in _WORDS) + _TAIL.encode()


class SpdyError(Exception):
    """The peer sent something that is not SPDY/3 (the connection is closed)."""


@dataclass(frozen=True)
class Control:
    """A control frame: its type, flags and (still encoded) payload."""

    kind: int
    flags: int
    payload: bytes


@dataclass(frozen=True)
class Data:
    stream_id: int
    flags: int
    data: bytes

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


@dataclass
class Buffer:
    """Incoming bytes, cut into frames as they complete."""

    pending: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[Control | Data]:
        self.pending += data
        frames: list[Control | Data] = []
        while len(self.pending) >= HEADER_SIZE:
            first, second = struct.unpack_from(">II", self.pending)
            length = second & MAX_LENGTH
            if len(self.pending) < HEADER_SIZE + length:
                break
            payload = bytes(self.pending[HEADER_SIZE : HEADER_SIZE + length])
            del self.pending[: HEADER_SIZE + length]
            flags = second >> 24
            if first & 0x80000000:
                if (first >> 16) & 0x7FFF != VERSION:
                    raise SpdyError(f"unsupported SPDY version {(first >> 16) & 0x7FFF}")
                frames.append(Control(first & 0xFFFF, flags, payload))
            else:
                frames.append(Data(first & 0x7FFFFFFF, flags, payload))
        return frames


class HeaderCodec:
    """The connection's two header-block zlib streams (one compresses ours, one inflates the peer's)."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=DICTIONARY)
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def encode(self, headers: dict[str, list[str]]) -> bytes:
        block = struct.pack(">I", len(headers))
        for name, values in headers.items():
            key, value = name.lower().encode(), "\0".join(values).encode()
            block += struct.pack(">I", len(key)) + key + struct.pack(">I", len(value)) + value
        return self._deflate.compress(block) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def decode(self, compressed: bytes) -> dict[str, list[str]]:
        try:
            block = self._inflate.decompress(compressed)
            (count,) = struct.unpack_from(">I", block)
            headers: dict[str, list[str]] = {}
            offset = 4
            for _ in range(count):
                values = []
                for _part in range(2):
                    (size,) = struct.unpack_from(">I", block, offset)
                    values.append(block[offset + 4 : offset + 4 + size].decode())
                    offset += 4 + size
                headers.setdefault(values[0].lower(), []).extend(values[1].split("\0"))
        except (zlib.error, struct.error, UnicodeDecodeError) as exc:
            raise SpdyError(f"invalid header block: {exc}") from None
        return headers


def control(kind: int, payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">II", 0x80000000 | VERSION << 16 | kind, flags << 24 | len(payload)) + payload


def data(stream_id: int, chunk: bytes, *, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (FLAG_FIN if fin else 0) << 24 | len(chunk)) + chunk


def syn_reply(codec: HeaderCodec, stream_id: int) -> bytes:
    return control(SYN_REPLY, struct.pack(">I", stream_id) + codec.encode({}))


def rst_stream(stream_id: int, status: int) -> bytes:
    return control(RST_STREAM, struct.pack(">II", stream_id, status))


def goaway(last_stream_id: int) -> bytes:
    return control(GOAWAY, struct.pack(">II", last_stream_id, 0))


def syn_stream_of(codec: HeaderCodec, frame: Control) -> tuple[int, dict[str, list[str]]]:
    """(stream id, headers) of a SYN_STREAM: id, associated id, priority and slot, then the header block."""
    if len(frame.payload) < 10:
        raise SpdyError("short SYN_STREAM frame")
    (stream_id,) = struct.unpack_from(">I", frame.payload)
    return stream_id & 0x7FFFFFFF, codec.decode(frame.payload[10:])


def stream_id_of(frame: Control) -> int:
    """The stream a RST_STREAM, HEADERS or WINDOW_UPDATE frame names."""
    if len(frame.payload) < 4:
        raise SpdyError("short control frame")
    return int(struct.unpack_from(">I", frame.payload)[0]) & 0x7FFFFFFF
