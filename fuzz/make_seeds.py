#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the fuzz targets into fuzz/corpus/<target>/.

Checksums are left zero: the binary targets' flags byte (bit 0) has the
harness recompute them, as fuzz/*_fuzzer.cc describe. Run it again after a
format change; reproducers of fixed findings live beside the seeds
(crash-*, named by libFuzzer) and are never regenerated.
"""
import gzip
import io
import os
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def tag(number, wire):
    return varint(number << 3 | wire)


def vfield(number, n):
    return tag(number, 0) + varint(n)


def sfield(number, data):
    if isinstance(data, str):
        data = data.encode()
    return tag(number, 2) + varint(len(data)) + data


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def record(rid, label, fields):
    header = vfield(1, rid) + sfield(2, "k%d" % rid) + sfield(3, label) + sfield(4, label)
    header += sfield(5, sfield(1, "colour") + sfield(2, "red"))
    for name, _ in fields:
        header += sfield(6, name)
    header += sfield(7, b"".join(varint(len(d)) for _, d in fields))  # packed
    payload = b"".join(d for _, d in fields)
    return struct.pack("<I", len(header)) + header + payload + b"\0" * 8


def shard(fmt, records, first_id=7):
    out = b"STRSHARD" + struct.pack("<II", fmt, 0)
    offsets = []
    for r in records:
        offsets.append(len(out))
        out += r
    meta = vfield(1, first_id) + sfield(3, "cats") + vfield(4, 2) + vfield(5, 1) + vfield(6, 10)
    footer_offset = len(out)
    if fmt == 1:
        footer = meta + sfield(2, b"".join(varint(o) for o in offsets))
    else:
        footer = struct.pack("<Q", len(offsets)) + b"".join(struct.pack("<Q", o) for o in offsets) + meta
    out += footer
    out += struct.pack("<QII", footer_offset, len(footer), fmt) + b"\0" * 16 + b"STRTRAIL"
    return out


def stratum_index(fmt, strata):
    samples = sum(len(s) for s in strata)
    out = b"STRIDX01" + struct.pack("<IIQQ", fmt, 0, len(strata), samples)
    at = 0
    offsets = [0]
    for s in strata:
        at += len(s)
        offsets.append(at)
    out += b"".join(struct.pack("<Q", o) for o in offsets)
    out += b"".join(struct.pack("<Q", i) for s in strata for i in s)
    if fmt == 2:
        blocks = (samples + 511) // 512
        out += b"\0" * 8 * blocks
    return out + b"\0" * 8 + b"STRIDXTR"


def tar_bytes(members, compress=False):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    return gzip.compress(data, mtime=0) if compress else data


def main():
    recs = [record(7, "cat", [("jpg", b"abc"), ("txt", b"hello")]), record(8, "dog", [("jpg", b"")]),
            record(9, "", [])]
    for fmt in (1, 2, 3):
        write("shard_file", "format%d" % fmt, b"\x01" + shard(fmt, recs))
    write("shard_file", "empty", b"\x01" + shard(3, []))
    write("shard_file", "raw_unfixed", b"\x00" + shard(3, recs[:1]))

    rec = record(7, "cat", [("jpg", b"abc"), ("txt", b"hello")])[:-8]
    write("record_view", "two_fields", b"\x01" + struct.pack("<Q", 7) + rec)
    unpacked = vfield(1, 3) + sfield(6, "a") + vfield(7, 2) + sfield(6, "b") + vfield(7, 1)
    write("record_view", "unpacked", b"\x01" + struct.pack("<Q", 3) + struct.pack("<I", len(unpacked)) + unpacked + b"xyz")

    strata = [[0, 2, 5], [], [1, 3, 4]]
    for fmt in (1, 2):
        write("stratum_index", "format%d" % fmt, b"\x01" + stratum_index(fmt, strata))
        write("stratum_index", "format%d_on_use" % fmt, b"\x03" + stratum_index(fmt, strata))
    write("stratum_index", "big_block", b"\x03" + stratum_index(2, [list(range(0, 1200, 2)), list(range(1, 1200, 2))]))

    write("resume_token", "v2", b"strata2:cats@3:0000000000001234:256:drop:080100ff:5:1:17")
    write("resume_token", "v2_default", b"strata2:cats@3:0000000000001234:256:short:-:5:1:17")
    write("resume_token", "v1", b"strata1:cats@1:00000000000000ab:1:2:3")

    members = [("a/0001.jpg", b"jpeg"), ("a/0001.cls", b" 3\n"), ("a/0001.json", b'{"w": 1, "n": "x", "o": {}}'),
               ("a/0002.seg.png", b"png"), ("a/0002", b"skipped"), ("a/._0003.jpg", b"hidden")]
    write("tar_source", "webdataset", tar_bytes(members))
    write("tar_source", "webdataset_gz", tar_bytes(members, compress=True))
    write("tar_source", "truncated", tar_bytes(members)[:700])

    write("csv_source", "basic", b"path,label,colour\na.jpg,cat,red\nb/c.png,dog,\"bl,ue\"\n")
    write("csv_source", "bom_quoted", b"\xef\xbb\xbfpath,label\n\"a.jpg\",\"multi\nline\"\n\n")
    write("csv_source", "missing", b"path\nnope.jpg\n")
    write("jsonl_source", "basic", b'{"path": "a.jpg", "label": "cat", "w": 1.5}\n\n{"path": "b/c.png", "label": 3, "o": [1]}\n')
    write("jsonl_source", "bad", b'{"path": 1}\n')

    ref = lambda name, version, seq: sfield(1, name) + vfield(2, version) + vfield(3, 0) + vfield(4, seq)
    write("rpc_request", "stream", b"\x00" + sfield(1, "cats@2") + vfield(3, 1) + vfield(4, 4) + vfield(5, 42))
    write("rpc_request", "ingest", b"\x01" + sfield(1, sfield(1, "cats") + sfield(2, "label")))
    write("rpc_request", "describe", b"\x02" + sfield(1, "cats@1"))
    write("rpc_request", "ping", b"\x03" + sfield(1, "node-a") + vfield(2, 5))
    write("rpc_request", "read_records", b"\x04" + sfield(1, ref("cats", 1, 2)) + sfield(2, varint(1) + varint(5)))
    version_record = sfield(1, sfield(1, "cats") + vfield(2, 1))
    shard_record = sfield(1, vfield(1, 0)) + sfield(2, "shards/cats/v1/000000.shard")
    write("rpc_request", "put_version", b"\x05" + sfield(1, sfield(1, version_record) + sfield(2, shard_record)))
    write("rpc_request", "put_version_escape",
          b"\x05" + sfield(1, sfield(1, version_record) + sfield(2, sfield(2, "../../etc/passwd"))))
    write("rpc_request", "list_versions", b"\x06" + vfield(1, 1) + sfield(2, "cats"))
    write("rpc_request", "list_local_files", b"\x07" + sfield(1, "cats") + vfield(2, 1))
    write("rpc_request", "put_file", b"\x08" + sfield(1, ref("cats", 1, 0)) + vfield(2, 10))
    write("rpc_request", "put_file_escape", b"\x08" + sfield(1, ref("../../../../tmp/x", 1, 0)))

    # A part as a client receives it: the first byte picks the slice size.
    packed = lambda values: b"".join(varint(v) for v in values)
    part = (vfield(1, 2) + vfield(2, 7) + vfield(6, 3) + sfield(7, packed([2, 0, 1])) + sfield(8, packed([9, 8, 7]))
            + sfield(9, "cat") + sfield(9, "dog") + sfield(9, "cat") + sfield(10, packed([3, 0, 5]))
            + sfield(18, "node-1"))
    write("received_part", "payload_last", b"\x03" + part + sfield(15, "aaaccccc"))
    write("received_part", "payload_first_and_twice", b"\x00" + sfield(15, "x") + part + sfield(15, "aaaccccc"))
    write("received_part", "following", b"\x05" + part + sfield(15, "aaaccccc")
          + sfield(19, vfield(2, 8) + sfield(15, "joined")))
    # Labels and strata named once per part (StreamRequest.indexed_labels):
    # with slot 0, which the harness fills first, and without it.
    names = sfield(20, "cat") + sfield(20, "dog") + sfield(22, "s")
    indexed = (vfield(1, 2) + vfield(2, 7) + vfield(6, 3) + sfield(7, packed([2, 0, 1])) + sfield(8, packed([9, 8, 7]))
               + names + sfield(21, packed([0, 1, 0])) + sfield(23, packed([0, 0, 0]))
               + sfield(10, packed([3, 0, 5])) + sfield(18, "node-1"))
    write("received_part", "indexed_labels", b"\x04" + indexed + sfield(15, "aaaccccc"))
    indexed_rest = (vfield(1, 2) + vfield(2, 7) + vfield(6, 3) + sfield(7, packed([2, 1])) + sfield(8, packed([9, 7]))
                    + names + sfield(21, packed([1, 0])) + sfield(23, packed([0, 0]))
                    + sfield(10, packed([3, 5])) + sfield(18, "node-1"))
    write("received_part", "indexed_labels_rest", b"\x02" + indexed_rest + sfield(15, "aaaccccc"))


if __name__ == "__main__":
    main()
