// advice.cpp - PyTorch names Locus does not have, and what to write
// instead: `locus.nn.Conv3d` raises an AttributeError that says so, rather
// than Python's bare "has no attribute".

#include "common.h"

using namespace locus::python;

namespace {

const char *const kNoTransposedConv =
    "conv_transpose2d over a height of 1: x.unsqueeze(2), a weight of "
    "kernel (1, k), then squeeze(2)";
const char *const kNoUpsample =
    "nearest and bilinear resizing import from ONNX (Resize, Upsample); in a "
    "recorded graph, index_select along each spatial axis gives "
    "nearest-neighbour upsampling";
const char *const kConstants =
    "tensors belong to a graph: g.zeros(shape), g.ones, g.full, g.arange, "
    "g.constant(values) record constants, g.input(name, shape) an input";
const char *const kFloat32 =
    "Locus computes in float32 (dtypes f32, i64, i32 and bool); mixed "
    "precision is not offered yet";
const char *const kOptimizers = "Locus has optim.SGD, optim.Adam and "
                                "optim.AdamW (with parameter groups)";
const char *const kSchedules =
    "LambdaLR(opt, lambda step: factor) expresses any schedule computed "
    "from the step; SequentialLR chains schedules";

} // namespace

void locus::python::bindAdvice(py::module_ &m) {
  adviseMissing(
      m, "torch",
      {{"tensor", kConstants},
       {"zeros", kConstants},
       {"ones", kConstants},
       {"full", kConstants},
       {"arange", kConstants},
       {"empty", kConstants},
       {"conv3d", "Locus has conv2d and conv1d"},
       {"conv_transpose1d", kNoTransposedConv},
       {"interpolate", kNoUpsample},
       {"cumsum", "ONNX CumSum imports; in a recorded graph, a product with "
                  "a triangular matrix computes it: matmul(x, "
                  "locus.triu(g.ones([n, n])))"},
       {"sort", "topk(x, k, dim) gives the k largest (or smallest) values "
                "in order and their indices, for k <= 64"},
       {"argsort", "topk(x, k, dim).indices, for k <= 64"},
       {"scatter", "not offered; a one-hot product writes into positions: "
                   "matmul(one_hot(index, n, dtype='f32').T, values)"},
       {"scatter_add", "not offered; a one-hot product adds into positions: "
                       "matmul(one_hot(index, n, dtype='f32').T, values)"},
       {"masked_select", "results of a data-dependent shape are not offered; "
                         "keep the shape with where(mask, x, 0) or "
                         "masked_fill"},
       {"nonzero", "results of a data-dependent shape are not offered; "
                   "where(mask, x, 0) or one_hot keep the shape"},
       {"einsum", "not offered; matmul, bmm, permute and sum express it"},
       {"kl_div", "write it from log-probabilities `input`: (target * "
                  "(target.log() - input)).sum() / N for reduction="
                  "'batchmean'"},
       {"float16", kFloat32},
       {"bfloat16", kFloat32},
       {"half", kFloat32},
       {"autocast", kFloat32}});
  py::module_ nn = m.attr("nn");
  adviseMissing(
      nn, "torch.nn",
      {{"Conv3d", "Locus has nn.Conv2d and nn.Conv1d"},
       {"ConvTranspose1d", kNoTransposedConv},
       {"Upsample", kNoUpsample},
       {"MaxPool1d", "x.unsqueeze(2), nn.MaxPool2d((1, k)), then "
                     "squeeze(2)"},
       {"AvgPool1d", "x.unsqueeze(2), nn.AvgPool2d((1, k)), then "
                     "squeeze(2)"},
       {"InstanceNorm2d", "nn.GroupNorm(C, C) normalises each channel of "
                          "each sample, as InstanceNorm2d(affine=True) "
                          "without running statistics"},
       {"ModuleList", "keep the layers in a Python list; each layer's "
                      "parameters() (or g.parameters()) gives the optimizer "
                      "its parameters"},
       {"ModuleDict", "keep the layers in a Python dict; each layer's "
                      "parameters() (or g.parameters()) gives the optimizer "
                      "its parameters"},
       {"Parameter", "g.parameter(name, shape, values) records a trained "
                     "parameter of the graph"},
       {"RNN", "nn.LSTM and nn.GRU are offered; an Elman RNN is "
               "h = (lin_x(x_t) + lin_h(h)).tanh() per step"},
       {"TransformerEncoder",
        "nn.Sequential(*[nn.TransformerEncoderLayer(g, d_model, nhead) for "
        "_ in range(n)])"},
       {"TransformerDecoderLayer",
        "build it from nn.MultiheadAttention, nn.LayerNorm and nn.Linear"},
       {"Transformer",
        "build it from nn.TransformerEncoderLayer, nn.MultiheadAttention, "
        "nn.LayerNorm and nn.Linear"},
       {"KLDivLoss", "write it from log-probabilities `input`: (target * "
                     "(target.log() - input)).sum() / N for reduction="
                     "'batchmean'"},
       {"DataParallel", "compile(g, data_parallel=True) and "
                        "model.join_data_parallel() train one process per "
                        "device (docs/distributed.md)"},
       {"parallel", "compile(g, data_parallel=True) and "
                    "model.join_data_parallel() train one process per "
                    "device (docs/distributed.md)"}});
  py::module_ optim = m.attr("optim");
  adviseMissing(optim, "torch.optim",
                {{"RMSprop", kOptimizers},
                 {"Adagrad", kOptimizers},
                 {"Adadelta", kOptimizers},
                 {"Adamax", kOptimizers},
                 {"NAdam", kOptimizers},
                 {"RAdam", kOptimizers},
                 {"LBFGS", kOptimizers},
                 {"SparseAdam", kOptimizers},
                 {"ASGD", kOptimizers},
                 {"Rprop", kOptimizers}});
  py::module_ schedules = optim.attr("lr_scheduler");
  adviseMissing(
      schedules, "torch.optim.lr_scheduler",
      {{"ReduceLROnPlateau",
        "it reads a metric on the host: compare the losses yourself and "
        "call locus.optim.set_lr(model, opt, lr)"},
       {"CyclicLR", kSchedules},
       {"CosineAnnealingWarmRestarts", kSchedules},
       {"PolynomialLR", kSchedules},
       {"ConstantLR", kSchedules},
       {"ChainedScheduler", kSchedules}});
}
