//===- layer_check.cpp - layers and functional ops against PyTorch --------===//
//
// Each case records one layer or function on inputs x..., the loss
// sum(out * R) for a random R, and its gradients with respect to every f32
// input and every parameter; compiles it (every op on the CPU, or with
// prefer-gpu on cpu + cuda:0, which runs on the sim device); sets every
// input and every parameter and buffer to the values torch_layers.py gives
// PyTorch (locus_init_fill's uniform generator, seeded by Graph::seedFor of
// "<case>/<name>"); runs it twice; and prints, as JSON, the output and
// the gradients of the second run and the state after the first (running
// statistics).
//
//   layer_check [cpu|sim] > got.json
//
//===----------------------------------------------------------------------===//

#include "locus/Compile.h"
#include "locus/Frontend/Nn.h"
#include "locus/locus_runtime.h"

#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace locus;

namespace {

/// What a case records: named f32 inputs the case made, the output, and
/// the layer whose state is set and differentiated.
struct Recorded {
  Tensor out;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::pair<std::string, Tensor>> state;
  /// i64 inputs and their fixed values.
  std::map<std::string, HostTensor> labels;
};

using Builder = std::function<Recorded(Graph &)>;

std::vector<float> uniform(const std::string &key, size_t n, double low,
                           double high) {
  Graph seeds("seeds");
  std::vector<float> values(n);
  locus_status_t status = locus_init_fill(LOCUS_INIT_UNIFORM, low, high,
                                          seeds.seedFor(key), n, values.data());
  if (status) {
    std::fprintf(stderr, "%s\n", locus_status_message(status));
    std::exit(2);
  }
  return values;
}

/// Values of state `name`: running variances stay positive.
std::vector<float> stateValues(const std::string &key, const std::string &name,
                               size_t n) {
  bool variance = name.size() >= 11 &&
                  name.compare(name.size() - 11, 11, "running_var") == 0;
  return variance ? uniform(key, n, 0.5, 1.5) : uniform(key, n, -1.0, 1.0);
}

void printArray(const std::vector<float> &values) {
  std::cout << "[";
  for (size_t i = 0; i < values.size(); ++i)
    std::printf("%s%.9g", i ? ", " : "", static_cast<double>(values[i]));
  std::cout << "]";
}

Tensor in(Graph &g, Recorded &r, const std::string &name, const Shape &shape) {
  Tensor t = g.input(name, shape);
  r.inputs.emplace_back(name, t);
  return t;
}

Tensor ids(Graph &g, Recorded &r, const std::string &name, const Shape &shape,
           std::vector<int64_t> values) {
  r.labels[name] = HostTensor::fromI64(shape, std::move(values));
  return g.input(name, shape, {.dtype = DType::i64});
}

std::map<std::string, Builder> cases() {
  std::map<std::string, Builder> all;
  all["layer_norm"] = [](Graph &g) {
    Recorded r;
    nn::LayerNorm m(g, {6}, {.name = "m"});
    r.out = m(in(g, r, "x", {4, 6}));
    r.state = m.state_dict();
    return r;
  };
  all["layer_norm_2d"] = [](Graph &g) {
    Recorded r;
    nn::LayerNorm m(g, {3, 4}, {.eps = 1e-3, .name = "m"});
    r.out = m(in(g, r, "x", {2, 3, 4}));
    r.state = m.state_dict();
    return r;
  };
  all["group_norm"] = [](Graph &g) {
    Recorded r;
    nn::GroupNorm m(g, 3, 6, {.name = "m"});
    r.out = m(in(g, r, "x", {2, 6, 3, 3}));
    r.state = m.state_dict();
    return r;
  };
  all["batch_norm_train"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm2d m(g, 3, {.momentum = 0.2, .name = "m"});
    r.out = m(in(g, r, "x", {4, 3, 5, 5}));
    r.state = m.state_dict();
    return r;
  };
  all["batch_norm_eval"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm2d m(g, 3, {.name = "m"});
    m.eval();
    r.out = m(in(g, r, "x", {4, 3, 5, 5}));
    r.state = m.state_dict();
    return r;
  };
  // One module called twice in a step: the running statistics take both
  // updates in order, as PyTorch's in-place updates do.
  all["batch_norm_twice"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm2d m(g, 3, {.momentum = 0.3, .name = "m"});
    r.out = m(in(g, r, "x1", {4, 3, 2, 2})) + m(in(g, r, "x2", {4, 3, 2, 2}));
    r.state = m.state_dict();
    return r;
  };
  all["batch_norm1d_train"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm1d m(g, 5, {.name = "m"});
    r.out = m(in(g, r, "x", {8, 5}));
    r.state = m.state_dict();
    return r;
  };
  all["batch_norm_no_affine"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm2d m(g, 3, {.affine = false, .name = "m"});
    r.out = m(in(g, r, "x", {4, 3, 5, 5}));
    r.state = m.state_dict();
    return r;
  };
  all["batch_norm1d_seq"] = [](Graph &g) {
    Recorded r;
    nn::BatchNorm1d m(g, 4, {.momentum = 0.3, .name = "m"});
    r.out = relu(m(in(g, r, "x", {3, 4, 7})));
    r.state = m.state_dict();
    return r;
  };
  // A ResNet BasicBlock in eval mode: convolutions feeding BatchNorm's
  // running statistics, a residual sum and ReLUs.
  all["basic_block_eval"] = [](Graph &g) {
    Recorded r;
    nn::Conv2d c1(g, 4, 4, {3},
                  {.padding = {1, 1}, .bias = false, .name = "m.c1"});
    nn::BatchNorm2d b1(g, 4, {.name = "m.b1"});
    nn::Conv2d c2(g, 4, 4, {3},
                  {.padding = {1, 1}, .bias = false, .name = "m.c2"});
    nn::BatchNorm2d b2(g, 4, {.name = "m.b2"});
    b1.eval();
    b2.eval();
    Tensor x = in(g, r, "x", {2, 4, 6, 6});
    Tensor y = relu(b1(c1(x)));
    r.out = relu(add(b2(c2(y)), x));
    for (const nn::Module *m :
         std::initializer_list<const nn::Module *>{&c1, &b1, &c2, &b2})
      for (auto &entry : m->state_dict())
        r.state.push_back(entry);
    return r;
  };
  all["embedding"] = [](Graph &g) {
    Recorded r;
    nn::Embedding m(g, 7, 4, {.name = "m"});
    r.out = m(ids(g, r, "ids", {2, 3}, {0, 6, 2, 2, 5, 1}));
    r.state = m.state_dict();
    return r;
  };
  // torch.gather along a middle axis (rank 4, so moving the axis last is a
  // real permutation), and along the last with an index smaller than the
  // input in another dimension.
  all["gather_axis1"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {2, 5, 3, 2});
    std::vector<int64_t> idx(2 * 4 * 3 * 2);
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<int64_t>((i * 7 + 3) % 5);
    r.out = gather(x, 1, ids(g, r, "index", {2, 4, 3, 2}, idx));
    return r;
  };
  all["gather_last_sliced"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {3, 6});
    r.out = gather(x, -1, ids(g, r, "index", {2, 2}, {5, 0, 3, 3}));
    return r;
  };
  all["lstm_cell"] = [](Graph &g) {
    Recorded r;
    nn::LSTMCell m(g, 4, 5, {.name = "m"});
    auto [h, c] =
        m(in(g, r, "x", {3, 4}), in(g, r, "h", {3, 5}), in(g, r, "c", {3, 5}));
    r.out = concat({h, c}, 1);
    r.state = m.state_dict();
    return r;
  };
  all["gru_cell"] = [](Graph &g) {
    Recorded r;
    nn::GRUCell m(g, 4, 5, {.name = "m"});
    r.out = m(in(g, r, "x", {3, 4}), in(g, r, "h", {3, 5}));
    r.state = m.state_dict();
    return r;
  };
  all["mha_causal"] = [](Graph &g) {
    Recorded r;
    nn::MultiheadAttention m(g, 8, 2, {.batchFirst = true, .name = "m"});
    Tensor x = in(g, r, "x", {2, 5, 8});
    r.out = m(x, x, x, {.isCausal = true});
    r.state = m.state_dict();
    return r;
  };
  all["mha_cross_bool_mask"] = [](Graph &g) {
    Recorded r;
    nn::MultiheadAttention m(g, 8, 4, {.name = "m"});
    Tensor q = in(g, r, "q", {3, 2, 8}), kv = in(g, r, "kv", {4, 2, 8});
    // Query i may not attend to key i + 1 (true: masked out).
    std::vector<int64_t> mask(12, 0);
    for (int i = 0; i < 3; ++i)
      mask[i * 4 + i + 1] = 1;
    Tensor boolMask = cast(g.constantI64({3, 4}, mask), DType::i1);
    r.out = m(q, kv, kv, {.attnMask = boolMask});
    r.state = m.state_dict();
    return r;
  };
  all["sdpa_additive"] = [](Graph &g) {
    Recorded r;
    Tensor q = in(g, r, "q", {2, 3, 4}), k = in(g, r, "k", {2, 5, 4}),
           v = in(g, r, "v", {2, 5, 6}), bias = in(g, r, "bias", {3, 5});
    r.out = scaled_dot_product_attention(q, k, v, {.attnMask = bias});
    return r;
  };
  all["matmul_broadcast"] = [](Graph &g) {
    Recorded r;
    Tensor a = in(g, r, "a", {2, 1, 3, 5}), b = in(g, r, "b", {4, 5, 2});
    Tensor c = in(g, r, "c", {2, 4, 3, 5}), d = in(g, r, "d", {5, 2});
    Tensor v = in(g, r, "v", {5});
    r.out = concat({flatten(matmul(a, b), 0), flatten(matmul(c, d), 0),
                    flatten(matmul(c, v), 0), flatten(matmul(v, b), 0)},
                   0);
    return r;
  };
  all["reductions"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {3, 4, 5});
    r.out = concat({flatten(var(x, {1}), 0),
                    flatten(locus::std(x, {0, 2}, false), 0),
                    flatten(logsumexp(x, {2}), 0), flatten(min(x, {1, 2}), 0),
                    flatten(cast(argmax(x, 1), DType::f32), 0)},
                   0);
    return r;
  };
  all["activations"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {4, 5});
    r.out = concat({leaky_relu(x, 0.2), clamp(x, -0.5, 0.25),
                    hardtanh(x, -0.3, 0.6), minimum(x, x * 0.5f)},
                   0);
    return r;
  };
  all["mobile_activations"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {6, 7});
    // Scaled so that every piece of each activation is reached: [-8, 8].
    Tensor v = x * 8.0f;
    r.out =
        concat({relu6(v), hardsigmoid(v * 0.5f), hardswish(v * 0.5f),
                softplus(v), softplus(v * 4.0f, 2.0, 5.0), mish(v * 0.5f),
                elu(v * 0.5f), elu(v * 0.5f, 0.7), nn::Hardtanh(-2.0, 3.0)(v)},
               0);
    return r;
  };
  all["shapes"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {2, 3, 4});
    std::vector<Tensor> parts = split(x, 3, 2);
    std::vector<Tensor> rows = unbind(x, 1);
    Tensor padded = pad(x, {1, 2, 0, 1}, 0.5);
    Tensor stacked = stack({rows[0], rows[2]}, 1);
    Tensor expanded =
        expand(unsqueeze(squeeze(slice(x, 1, 0, 1), 1), 0), {3, -1, -1});
    r.out =
        concat({flatten(parts[1], 0), flatten(padded, 0), flatten(stacked, 0),
                flatten(expanded, 0), flatten(triu(x, 1), 0),
                flatten(tril(x), 0), flatten(chunk(x, 2, 1)[1], 0)},
               0);
    return r;
  };
  all["adaptive_pool"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {2, 3, 7, 6});
    r.out = concat({flatten(adaptive_avg_pool2d(x, {3, 4}), 1),
                    flatten(adaptive_avg_pool2d(x, {1}), 1),
                    flatten(nn::AdaptiveAvgPool2d({7, 3})(x), 1)},
                   1);
    return r;
  };
  all["masked_fill_where_i64"] = [](Graph &g) {
    Recorded r;
    Tensor x = in(g, r, "x", {3, 4});
    Tensor k = ids(g, r, "ids", {3, 4}, {0, 1, 2, 3, 3, 2, 1, 0, 2, 2, 0, 1});
    Tensor pick = eq(k, g.full({}, 2, DType::i64));
    Tensor big = ge(k, g.arange(4));
    r.out = concat(
        {masked_fill(x, pick, -3.0), where(big, x, x * 2.0f),
         cast(index_select(k, 1, g.constantI64({2}, {3, 0})), DType::f32)},
        1);
    return r;
  };
  return all;
}

std::vector<float> valuesOf(const HostTensor &t) {
  if (t.dtype == DType::f32)
    return t.f32;
  return std::vector<float>(t.i64.begin(), t.i64.end());
}

void runCase(const std::string &name, const Builder &build,
             const std::string &variant, bool first) {
  Graph g(name);
  Recorded r = build(g);
  Tensor R = g.input("R", r.out.shape());
  Tensor loss = sum(flatten(mul(r.out, R), 0), {0});
  std::vector<Tensor> wrt;
  std::vector<std::string> names;
  for (auto &[n, t] : r.inputs) {
    wrt.push_back(t);
    names.push_back(n);
  }
  for (auto &[n, t] : r.state)
    if (n.find("running_") == std::string::npos) {
      wrt.push_back(t);
      names.push_back(n);
    }
  g.output("out", r.out);
  std::vector<Tensor> grads = grad(loss, wrt);
  for (size_t i = 0; i < grads.size(); ++i)
    g.output("grad/" + names[i], grads[i]);

  CompileOptions options;
  if (variant == "sim") {
    options.devices = {"cpu", "cuda:0"};
    options.policy = "prefer-gpu";
  } else {
    options.policy = "cpu";
  }
  CompiledModel model = compile(g, options);
  const std::string prefix = name + "/";
  for (auto &[n, t] : r.state) {
    std::vector<float> v = stateValues(prefix + n, n, t.numel());
    model.setState(n, HostTensor::fromF32(t.shape(), v));
  }
  std::map<std::string, HostTensor> feeds = r.labels;
  for (auto &[n, t] : r.inputs)
    feeds[n] = HostTensor::fromF32(t.shape(),
                                   uniform(prefix + n, t.numel(), -1.0, 1.0));
  feeds["R"] = HostTensor::fromF32(
      r.out.shape(), uniform(name + "/R", r.out.numel(), -1.0, 1.0));
  std::map<std::string, HostTensor> outputs = model.run(feeds);
  // The state after one run (running statistics), then the outputs of a
  // second run on the same inputs: a run must leave every state it does not
  // assign as it was.
  std::map<std::string, HostTensor> after;
  for (auto &[n, t] : r.state)
    after[n] = model.state(n);
  outputs = model.run(feeds);

  std::cout << (first ? "" : ",\n") << "  \"" << name << "\": {\"out\": ";
  printArray(valuesOf(outputs.at("out")));
  for (const std::string &n : names) {
    std::cout << ", \"grad/" << n << "\": ";
    printArray(valuesOf(outputs.at("grad/" + n)));
  }
  for (auto &[n, t] : r.state)
    if (n.find("running_") != std::string::npos) {
      std::cout << ", \"state/" << n << "\": ";
      printArray(valuesOf(after.at(n)));
    }
  std::cout << "}";
}

} // namespace

int main(int argc, char **argv) {
  std::string variant = argc > 1 ? argv[1] : "cpu";
  // An optional second argument runs that case alone (for debugging one).
  std::string only = argc > 2 ? argv[2] : "";
  bool first = true;
  std::cout << "{\n";
  for (auto &[name, build] : cases()) {
    if (!only.empty() && name != only)
      continue;
    runCase(name, build, variant, first);
    first = false;
  }
  std::cout << "\n}\n";
  return 0;
}
