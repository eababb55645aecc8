"""Writes a .npy file without numpy: make_npy.py out.npy descr shape value.

descr is <f4, <i8 or |b1; shape like 100,10; every element is `value`,
or with value "none" the header alone (a shape too large to hold).
"""
import struct
import sys

path, descr, shape, value = sys.argv[1:5]
dims = tuple(int(d) for d in shape.split(",") if d)
count = 1
for d in dims:
    count *= d
shape_text = "(" + ",".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
fmt = {"<f4": "<f", "<i8": "<q", "|b1": "<B"}[descr]
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    if value == "none":
        sys.exit(0)
    number = float(value) if descr == "<f4" else int(value)
    f.write(struct.pack("<%d%s" % (count, fmt[-1]), *([number] * count)))
