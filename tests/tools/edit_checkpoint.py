#!/usr/bin/env python3
"""Makes a crafted copy of a `loom train` checkpoint for tests/tools/train_test.sh.

Usage: edit_checkpoint.py IN OUT [EDIT ...]
Each EDIT changes the "loom.train" metadata (JSON) and is one of:
  path=JSON         set a field (path: keys and list indices joined by '.', e.g. config.lr,
                    rows.0.7); the value is JSON (5, -1, "text", [], null)
  path@key=JSON     set a key of the JSON held in a string field (scheduler@base_lrs=[])
  del:path          remove a field
  --drop-checksums  remove Loom's checksums (a file as another writer would leave it)
  --keep-checksums  leave the stored checksums as they are (so the edit shows as corruption)
  --flip-last-byte  flip one bit of the file's last data byte
By default the metadata checksum is recomputed (Note [Checksums] in
plugins/data/include/loom/data/safetensors.h), so what refuses the file is the field's own
check, not the checksum.
"""
import json
import struct
import sys
import zlib


def walk(obj, keys):
    for k in keys:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    return obj


def set_path(obj, path, value):
    keys = path.split('.')
    parent = walk(obj, keys[:-1])
    last = keys[-1]
    if isinstance(parent, list):
        parent[int(last)] = value
    else:
        parent[last] = value


def main():
    src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
    raw = open(src, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    meta = header['__metadata__']
    train = json.loads(meta['loom.train'])
    checksums = 'recompute'
    for e in edits:
        if e == '--drop-checksums':
            checksums = 'drop'
        elif e == '--keep-checksums':
            checksums = 'keep'
        elif e == '--flip-last-byte':
            data[-1] ^= 0x01
        elif e.startswith('del:'):
            keys = e[4:].split('.')
            del walk(train, keys[:-1])[keys[-1]]
        else:
            path, value = e.split('=', 1)
            value = json.loads(value)
            if '@' in path:
                field, key = path.split('@', 1)
                inner = json.loads(walk(train, field.split('.')))
                set_path(inner, key, value)
                set_path(train, field, json.dumps(inner))
            else:
                set_path(train, path, value)
    meta['loom.train'] = json.dumps(train)
    if checksums == 'drop':
        meta.pop('loom.crc32', None)
    elif checksums == 'recompute' and 'loom.crc32' in meta:
        sums = json.loads(meta['loom.crc32'])
        crc = 0
        for k in sorted(k for k in meta if k != 'loom.crc32'):
            crc = zlib.crc32(k.encode() + b'\0' + meta[k].encode() + b'\0', crc)
        sums['__metadata__'] = '%08x' % crc
        meta['loom.crc32'] = json.dumps(sums)
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    open(dst, 'wb').write(struct.pack('<Q', len(text)) + text + bytes(data))


main()
