"""SPDY/3 framing (kdsim.exec.spdy) against frames built independently, as spdystream's framer builds them: one
zlib stream per direction primed with the SPDY/3 dictionary, and frames cut anywhere by TCP."""

from __future__ import annotations

import struct
import zlib

import pytest

from kdsim.exec import spdy


def header_block(pairs: list[tuple[str, str]]) -> bytes:
    out = struct.pack(">I", len(pairs))
    for name, value in pairs:
        out += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
    return out


class GoClient:
    """What client-go's connection writes: SYN_STREAMs whose header blocks share one compressor."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=spdy.DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)

    def syn_stream(self, stream_id: int, pairs: list[tuple[str, str]], fin: bool = False) -> bytes:
        block = self.deflate.compress(header_block(pairs)) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
        return struct.pack(">II", 0x80030001, (1 if fin else 0) << 24 | len(payload)) + payload


def test_frames_cut_anywhere_are_reassembled_and_headers_share_one_zlib_stream() -> None:
    client = GoClient()
    wire = (
        client.syn_stream(1, [("streamtype", "error")])
        + client.syn_stream(3, [("streamtype", "stdin"), ("x-multi", "a\0b")])
        + struct.pack(">II", 3, 1 << 24 | 5)
        + b"hello"  # data on stream 3 with FIN
        + spdy.control(spdy.PING, struct.pack(">I", 7))
    )
    buffer, frames = spdy.Buffer(), []
    for i in range(len(wire)):  # one byte at a time
        frames += buffer.feed(wire[i : i + 1])
    assert not buffer.pending
    codec = spdy.HeaderCodec()
    first, second, data, ping = frames
    assert isinstance(first, spdy.Control) and isinstance(second, spdy.Control)
    assert spdy.syn_stream_of(codec, first) == (1, {"streamtype": ["error"]})
    assert spdy.syn_stream_of(codec, second) == (3, {"streamtype": ["stdin"], "x-multi": ["a", "b"]})
    assert data == spdy.Data(3, spdy.FLAG_FIN, b"hello") and data.fin
    assert isinstance(ping, spdy.Control) and (ping.kind, ping.payload) == (spdy.PING, struct.pack(">I", 7))


def test_replies_decode_with_a_dictionary_primed_zlib_reader() -> None:
    """Go's zlib.NewReaderDict needs the FDICT header with the dictionary's id, then blocks that continue."""
    codec, client = spdy.HeaderCodec(), GoClient()
    replies = spdy.syn_reply(codec, 1) + spdy.syn_reply(codec, 3)
    frames = spdy.Buffer().feed(replies)
    assert [f.kind for f in frames if isinstance(f, spdy.Control)] == [spdy.SYN_REPLY, spdy.SYN_REPLY]
    for frame, stream_id in zip(frames, (1, 3)):
        assert isinstance(frame, spdy.Control)
        assert struct.unpack_from(">I", frame.payload)[0] == stream_id
        assert client.inflate.decompress(frame.payload[4:]) == struct.pack(">I", 0)
    assert frames[0].payload[4] == 0x78 and frames[0].payload[5] & 0x20  # a zlib header with FDICT set
    assert struct.unpack_from(">I", frames[0].payload, 6)[0] == zlib.adler32(spdy.DICTIONARY)


def test_other_versions_and_broken_header_blocks_are_refused() -> None:
    with pytest.raises(spdy.SpdyError, match="unsupported SPDY version 2"):
        spdy.Buffer().feed(struct.pack(">II", 0x80020001, 0))
    broken = spdy.Control(spdy.SYN_STREAM, 0, struct.pack(">IIBB", 1, 0, 0, 0) + b"not zlib")
    with pytest.raises(spdy.SpdyError, match="invalid header block"):
        spdy.syn_stream_of(spdy.HeaderCodec(), broken)
