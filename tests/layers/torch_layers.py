#!/usr/bin/env python3
"""PyTorch's outputs, gradients and running statistics for layer_check's
cases, from the same numbers, in double precision.

Every f32 input and every parameter or buffer of case C named N holds
locus_init_fill's U(-1, 1) values seeded by Graph::seedFor("C/N")
(running_var: U(0.5, 1.5)), as layer_check sets them; the loss is
sum(out * R) with R seeded by "C/R". Gradients are taken with respect to
every f32 input and every parameter.

Made with Debian's python3-torch (1.13.1), on the CPU:

  /usr/bin/python3 tests/layers/torch_layers.py > tests/layers/reference.json
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "seeds"))
from torch_reference import seed_for, uniform  # noqa: E402

torch.set_default_dtype(torch.float64)


def values(key, shape, low=-1.0, high=1.0):
    n = math.prod(shape)
    return torch.tensor(uniform(n, low, high, seed_for(key)), dtype=torch.float64).reshape(shape)


class Case:
    def __init__(self, name):
        self.name = name
        self.inputs = {}
        self.module = None

    def x(self, name, shape):
        t = values(self.name + "/" + name, shape).requires_grad_(True)
        self.inputs[name] = t
        return t

    def use(self, module):
        """Sets module's state as layer_check does ("m.<torch name>")."""
        self.module = module.double()
        with torch.no_grad():
            for n, p in list(module.named_parameters()) + list(module.named_buffers()):
                if not p.dtype.is_floating_point:
                    continue
                key = self.name + "/m." + n
                lo, hi = (0.5, 1.5) if n.endswith("running_var") else (-1.0, 1.0)
                p.copy_(values(key, p.shape, lo, hi))
        return module

    def finish(self, out):
        r = values(self.name + "/R", out.shape)
        (out * r).sum().backward()
        result = {"out": out.detach().flatten().tolist()}
        for n, t in self.inputs.items():
            result["grad/" + n] = t.grad.flatten().tolist()
        if self.module is not None:
            for n, p in self.module.named_parameters():
                result["grad/m." + n] = p.grad.flatten().tolist()
            for n, b in self.module.named_buffers():
                if n.startswith("running_"):
                    result["state/m." + n] = b.flatten().tolist()
        return result


def layer_norm():
    c = Case("layer_norm")
    m = c.use(torch.nn.LayerNorm([6]))
    return c.finish(m(c.x("x", [4, 6])))


def layer_norm_2d():
    c = Case("layer_norm_2d")
    m = c.use(torch.nn.LayerNorm([3, 4], eps=1e-3))
    return c.finish(m(c.x("x", [2, 3, 4])))


def group_norm():
    c = Case("group_norm")
    m = c.use(torch.nn.GroupNorm(3, 6))
    return c.finish(m(c.x("x", [2, 6, 3, 3])))


def batch_norm_train():
    c = Case("batch_norm_train")
    m = c.use(torch.nn.BatchNorm2d(3, momentum=0.2))
    return c.finish(m(c.x("x", [4, 3, 5, 5])))


def batch_norm_eval():
    c = Case("batch_norm_eval")
    m = c.use(torch.nn.BatchNorm2d(3))
    m.eval()
    return c.finish(m(c.x("x", [4, 3, 5, 5])))


def batch_norm_twice():
    c = Case("batch_norm_twice")
    m = c.use(torch.nn.BatchNorm2d(3, momentum=0.3))
    return c.finish(m(c.x("x1", [4, 3, 2, 2])) + m(c.x("x2", [4, 3, 2, 2])))


def batch_norm1d_train():
    c = Case("batch_norm1d_train")
    m = c.use(torch.nn.BatchNorm1d(5))
    return c.finish(m(c.x("x", [8, 5])))


def batch_norm_no_affine():
    c = Case("batch_norm_no_affine")
    m = c.use(torch.nn.BatchNorm2d(3, affine=False))
    return c.finish(m(c.x("x", [4, 3, 5, 5])))


def batch_norm1d_seq():
    c = Case("batch_norm1d_seq")
    m = c.use(torch.nn.BatchNorm1d(4, momentum=0.3))
    return c.finish(torch.relu(m(c.x("x", [3, 4, 7]))))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(4)
        self.c2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + x)


def basic_block_eval():
    c = Case("basic_block_eval")
    m = c.use(Block())
    m.eval()
    return c.finish(m(c.x("x", [2, 4, 6, 6])))


def embedding():
    c = Case("embedding")
    m = c.use(torch.nn.Embedding(7, 4))
    return c.finish(m(torch.tensor([[0, 6, 2], [2, 5, 1]])))


def gather_axis1():
    c = Case("gather_axis1")
    x = c.x("x", [2, 5, 3, 2])
    index = torch.tensor([(i * 7 + 3) % 5 for i in range(2 * 4 * 3 * 2)]).reshape(2, 4, 3, 2)
    return c.finish(torch.gather(x, 1, index))


def gather_last_sliced():
    c = Case("gather_last_sliced")
    x = c.x("x", [3, 6])
    return c.finish(torch.gather(x, -1, torch.tensor([[5, 0], [3, 3]])))


def lstm_cell():
    c = Case("lstm_cell")
    m = c.use(torch.nn.LSTMCell(4, 5))
    h, cc = m(c.x("x", [3, 4]), (c.x("h", [3, 5]), c.x("c", [3, 5])))
    return c.finish(torch.cat([h, cc], 1))


def gru_cell():
    c = Case("gru_cell")
    m = c.use(torch.nn.GRUCell(4, 5))
    return c.finish(m(c.x("x", [3, 4]), c.x("h", [3, 5])))


def mha_causal():
    c = Case("mha_causal")
    m = c.use(torch.nn.MultiheadAttention(8, 2, batch_first=True))
    x = c.x("x", [2, 5, 8])
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    out, _ = m(x, x, x, attn_mask=causal, need_weights=False)
    return c.finish(out)


def mha_cross_bool_mask():
    c = Case("mha_cross_bool_mask")
    m = c.use(torch.nn.MultiheadAttention(8, 4))
    q, kv = c.x("q", [3, 2, 8]), c.x("kv", [4, 2, 8])
    mask = torch.zeros(3, 4, dtype=torch.bool)
    for i in range(3):
        mask[i, i + 1] = True
    out, _ = m(q, kv, kv, attn_mask=mask, need_weights=False)
    return c.finish(out)


def sdpa_additive():
    # torch 1.13 has no scaled_dot_product_attention: its definition.
    c = Case("sdpa_additive")
    q, k, v = c.x("q", [2, 3, 4]), c.x("k", [2, 5, 4]), c.x("v", [2, 5, 6])
    bias = c.x("bias", [3, 5])
    scores = q @ k.transpose(-2, -1) / math.sqrt(4) + bias
    return c.finish(torch.softmax(scores, -1) @ v)


def matmul_broadcast():
    c = Case("matmul_broadcast")
    a, b = c.x("a", [2, 1, 3, 5]), c.x("b", [4, 5, 2])
    cc, d, v = c.x("c", [2, 4, 3, 5]), c.x("d", [5, 2]), c.x("v", [5])
    return c.finish(torch.cat([torch.matmul(a, b).flatten(), torch.matmul(cc, d).flatten(),
                               torch.matmul(cc, v).flatten(), torch.matmul(v, b).flatten()]))


def reductions():
    c = Case("reductions")
    x = c.x("x", [3, 4, 5])
    return c.finish(torch.cat([x.var(1).flatten(), x.std((0, 2), unbiased=False).flatten(),
                               torch.logsumexp(x, 2).flatten(), x.amin((1, 2)).flatten(),
                               x.argmax(1).double().flatten()]))


def activations():
    c = Case("activations")
    x = c.x("x", [4, 5])
    return c.finish(torch.cat([F.leaky_relu(x, 0.2), torch.clamp(x, -0.5, 0.25),
                               F.hardtanh(x, -0.3, 0.6), torch.minimum(x, x * 0.5)], 0))


def mobile_activations():
    c = Case("mobile_activations")
    x = c.x("x", [6, 7])
    # Scaled so that every piece of each activation is reached: [-8, 8].
    v = x * 8.0
    return c.finish(torch.cat([F.relu6(v), F.hardsigmoid(v * 0.5), F.hardswish(v * 0.5),
                               F.softplus(v), F.softplus(v * 4.0, beta=2.0, threshold=5.0),
                               F.mish(v * 0.5), F.elu(v * 0.5), F.elu(v * 0.5, alpha=0.7),
                               torch.nn.Hardtanh(-2.0, 3.0)(v)], 0))


def shapes():
    c = Case("shapes")
    x = c.x("x", [2, 3, 4])
    parts = torch.split(x, 3, 2)
    rows = torch.unbind(x, 1)
    padded = F.pad(x, (1, 2, 0, 1), value=0.5)
    stacked = torch.stack([rows[0], rows[2]], 1)
    expanded = x[:, 0:1].squeeze(1).unsqueeze(0).expand(3, -1, -1)
    return c.finish(torch.cat([parts[1].flatten(), padded.flatten(), stacked.flatten(),
                               expanded.flatten(), torch.triu(x, 1).flatten(),
                               torch.tril(x).flatten(), torch.chunk(x, 2, 1)[1].flatten()]))


def adaptive_pool():
    c = Case("adaptive_pool")
    x = c.x("x", [2, 3, 7, 6])
    return c.finish(torch.cat([F.adaptive_avg_pool2d(x, (3, 4)).flatten(1),
                               F.adaptive_avg_pool2d(x, 1).flatten(1),
                               torch.nn.AdaptiveAvgPool2d((7, 3))(x).flatten(1)], 1))


def masked_fill_where_i64():
    c = Case("masked_fill_where_i64")
    x = c.x("x", [3, 4])
    k = torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0], [2, 2, 0, 1]])
    return c.finish(torch.cat([x.masked_fill(k == 2, -3.0), torch.where(k >= torch.arange(4), x, x * 2),
                               torch.index_select(k, 1, torch.tensor([3, 0])).double()], 1))


CASES = [basic_block_eval, layer_norm, layer_norm_2d, group_norm, batch_norm_train, batch_norm_eval,
         batch_norm_twice, batch_norm1d_train, batch_norm_no_affine, batch_norm1d_seq,
         embedding, gather_axis1, gather_last_sliced, lstm_cell, gru_cell, mha_causal,
         mha_cross_bool_mask, sdpa_additive, matmul_broadcast, reductions,
         activations, mobile_activations, shapes, adaptive_pool, masked_fill_where_i64]

if __name__ == "__main__":
    out = {case.__name__: case() for case in CASES}
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")
