"""Changes one byte of an artifact's graph section (which the runtime does
not read, so the file still loads) and makes its FNV-1a checksum good
again: what an attacker with the file can do. Usage: tamper_artifact.py IN OUT
"""
import struct
import sys

data = bytearray(open(sys.argv[1], "rb").read())
count = struct.unpack_from("<I", data, 24)[0]
for i in range(count):
    kind, _, offset, size = struct.unpack_from("<IIQQ", data, 64 + 24 * i)
    if kind == 1:  # the graph: MLIR text
        at = data.index(b"locus.graph", offset, offset + size)
        data[at] = ord("L")
        break
else:
    sys.exit("no graph section")
data[32:40] = bytes(8)
h = 0xCBF29CE484222325
for c in data:
    h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
struct.pack_into("<Q", data, 32, h)
open(sys.argv[2], "wb").write(data)
