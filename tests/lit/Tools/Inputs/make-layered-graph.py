"""Writes a locus graph of at least N ops in named layers, as a C++ model
recorded with named modules would be: stages of residual blocks
("stages.S.B"), each with two linear layers ("stages.S.B.fc1") around a
relu and a residual add. Every seventh block's weights are pinned to
cuda:0 and its input moved there (locus.to), its output back to the CPU,
so that placement has copies to draw.

  make-layered-graph.py N > graph.mlir
"""
import sys

target = int(sys.argv[1])
lines = []
count = 0


def emit(text):
    global count
    lines.append("    " + text)
    count += 1


def at(path, line):
    return 'loc(callsite("%s"("model.cpp":%d:5) at "model.cpp":%d:9))' % (
        path, 10 + line % 50, 100 + line % 50)


emit('%x = locus.input "x" : tensor<16x64xf32> loc("model.cpp":5:3)')
prev, block = "%x", 0
while count < target - 2:
    path = "stages.%d.%d" % (block // 8, block % 8)
    on = " on #locus.device<cuda:0>" if block % 7 == 3 else ""
    names = []
    for fc in ("fc1", "fc2"):
        for part, shape in (("weight", "64x64"), ("bias", "64")):
            name = "%s.%s.%s" % (path, fc, part)
            names.append(name)
            emit('%%%s = locus.state "%s" parameter : tensor<%sxf32> init '
                 '<full(0.01)>%s loc("model.cpp":%d:5)' %
                 (name, name, shape, on, 10 + block % 50))
    t = "tensor<16x64xf32>"
    if on:
        emit("%%b%d_in = locus.to #locus.device<cuda:0>, %s : %s %s" %
             (block, prev, t, at(path, block)))
        prev = "%%b%d_in" % block
    emit("%%b%d_h = locus.linear %s, %%%s, %%%s : %s, tensor<64x64xf32>, "
         "tensor<64xf32> -> %s %s" % (block, prev, names[0], names[1], t, t,
                                      at(path + ".fc1", block)))
    emit("%%b%d_r = locus.relu %%b%d_h : %s %s" % (block, block, t,
                                                  at(path, block)))
    emit("%%b%d_o = locus.linear %%b%d_r, %%%s, %%%s : %s, "
         "tensor<64x64xf32>, tensor<64xf32> -> %s %s" %
         (block, block, names[2], names[3], t, t, at(path + ".fc2", block)))
    emit("%%b%d_a = locus.add %%b%d_o, %s : %s %s" % (block, block, prev, t,
                                                     at(path, block)))
    emit("%%b%d = locus.relu %%b%d_a : %s %s" % (block, block, t,
                                                at(path, block)))
    prev = "%%b%d" % block
    if on:
        emit("%%b%d_back = locus.to #locus.device<cpu>, %s : %s %s" %
             (block, prev, t, at(path, block)))
        prev = "%%b%d_back" % block
    block += 1
emit('locus.output "y" = %s : tensor<16x64xf32> loc("model.cpp":200:3)' %
     prev)
print("module {\n  locus.graph @layered {")
print("\n".join(lines))
print("  }\n}")
