// ONNX import from C++: an imported graph is a Graph like any other (its
// initializers are parameters that start from the model's values, which
// compile() and save() keep), it takes a loss and an optimizer for
// fine-tuning, and state given values from C++ behaves the same way.

#include "locus/Compile.h"
#include "locus/Import/Onnx.h"
#include "locus/half.hpp"
#include "locus/locus.h"
#include "locus/runtime.hpp"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace locus;

namespace {

const std::string kMlp = std::string(LOCUS_TEST_INPUTS) + "/mlp.onnx";

/// `model` written to a file of this test's own, named after `stem`.
std::string writeModel(const onnx::ModelProto &model, const std::string &stem) {
  std::string path = ::testing::TempDir() + "/locus_" + stem + "_" +
                     std::to_string(::getpid()) + ".onnx";
  std::string bytes;
  model.SerializeToString(&bytes);
  FILE *f = std::fopen(path.c_str(), "wb");
  EXPECT_TRUE(f &&
              std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  if (f)
    std::fclose(f);
  return path;
}

} // namespace

TEST(OnnxImport, InitializersStartTheModelAndTravelInTheArtifact) {
  Graph g = importOnnx(kMlp, {.shapes = {{"x", {5, 4}}}});
  ASSERT_EQ(g.parameters().size(), 4u);
  std::vector<float> w1 = g.initialValue(g.parameters()[0]);
  ASSERT_EQ(w1.size(), 32u);
  EXPECT_NE(w1, std::vector<float>(32, 0.0f)); // the model's, not zeros
  CompiledModel model = compile(g);
  EXPECT_EQ(model.state("fc1.weight").f32, w1);
  HostTensor x = HostTensor::fromF32({5, 4}, std::vector<float>(20, 0.5f));
  std::vector<float> y = model.run({{"x", x}}).at("y").f32;
  // numpy's value for x = 0.5 (tests/lit/Tools/Inputs/make_onnx.py).
  EXPECT_NEAR(y[0], -1.6750526f, 1e-5);
  EXPECT_NEAR(y[1], 0.7043116f, 1e-5);

  std::string path =
      ::testing::TempDir() + "onnx_" + std::to_string(::getpid()) + ".locus";
  model.save(path);
  rt::Model loaded = rt::Model::load(path);
  rt::Context context(loaded);
  context.setInput("x", x.f32);
  context.run();
  EXPECT_EQ(context.output<float>("y"), y);
  std::remove(path.c_str());
}

TEST(OnnxImport, AnImportedModelFineTunes) {
  Graph g = importOnnx(kMlp, {.shapes = {{"x", {8, 4}}}});
  auto target = g.input("target", {8, 3});
  auto loss = nn::MSELoss()(g.outputValue("y"), target);
  g.output("loss", loss);
  optim::SGD(g.parameters(), {.lr = 0.05}).step(loss);
  CompiledModel step = compile(g);
  std::vector<float> xs(32), ts(24);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(float(i));
  for (size_t i = 0; i < ts.size(); ++i)
    ts[i] = std::cos(float(i));
  std::vector<float> losses;
  losses.reserve(5);
  for (int s = 0; s < 5; ++s)
    losses.push_back(step.run({{"x", HostTensor::fromF32({8, 4}, xs)},
                               {"target", HostTensor::fromF32({8, 3}, ts)}})
                         .at("loss")
                         .scalar());
  for (size_t s = 1; s < losses.size(); ++s)
    EXPECT_LT(losses[s], losses[s - 1]);
  EXPECT_NE(step.state("fc2.weight").f32,
            g.initialValue(g.parameters()[2])); // trained
}

TEST(OnnxImport, StateGivenValuesFromCpp) {
  Graph g("given");
  auto x = g.input("x", {2});
  auto w = g.parameter("w", {2}, std::vector<float>{3.0f, -1.0f});
  auto b = g.buffer("b", {2}, std::vector<float>{0.5f, 0.25f});
  g.output("y", x * w + b);
  EXPECT_EQ(g.initialValue(w), (std::vector<float>{3.0f, -1.0f}));
  CompiledModel model = compile(g);
  auto y = model.run({{"x", HostTensor::fromF32({2}, {1.0f, 2.0f})}});
  EXPECT_EQ(y.at("y").f32, (std::vector<float>{3.5f, -1.75f}));
  try {
    g.parameter("v", {3}, std::vector<float>{1.0f});
    ADD_FAILURE() << "three elements from one value";
  } catch (const Error &e) {
    EXPECT_EQ(e.line(), __LINE__ - 3);
    EXPECT_NE(e.message().find("parameter 'v' of shape [3] needs 3 values, "
                               "got 1"),
              std::string::npos)
        << e.message();
  }
  EXPECT_THROW(g.outputValue("z"), Error);
}

// Warnings about an imported model name its file and the node (or input)
// concerned, as its errors do.
TEST(OnnxImport, WarningsNameTheFileAndTheNode) {
  Graph g = importOnnx(kMlp, {.shapes = {{"x", {5, 4}}}});
  std::vector<Diagnostic> seen;
  compile(g, {.policy = "prefer-gpu",
              .devices = {"cpu", "cuda:0"},
              .diagnostics = [&](const Diagnostic &d) { seen.push_back(d); },
              .deviceMap = "cuda:0=sim"});
  auto crossing = std::find_if(seen.begin(), seen.end(), [](const auto &d) {
    return d.message.find("cross devices every step") != std::string::npos;
  });
  ASSERT_NE(crossing, seen.end());
  EXPECT_EQ(crossing->file, kMlp);
  EXPECT_EQ(crossing->line, 0u);
  EXPECT_EQ(crossing->message.rfind("input 'x': 2 value(s) cross devices", 0),
            0u)
      << crossing->message;
  EXPECT_NE(crossing->str().find("mlp.onnx: warning: input 'x': "),
            std::string::npos)
      << crossing->str();
}

TEST(OnnxImport, ErrorsNameTheFileAndTheNode) {
  try {
    importOnnx(kMlp, {.shapes = {{"x", {5, 4, 1}}}});
    ADD_FAILURE() << "a rank-3 shape for a rank-2 input";
  } catch (const Error &e) {
    EXPECT_EQ(e.file(), kMlp);
    EXPECT_EQ(e.line(), 0u);
    EXPECT_NE(std::string(e.what()).find(
                  "mlp.onnx: error: --shape gives input 'x' rank 3; the "
                  "model's is 2"),
              std::string::npos)
        << e.what();
  }
}

// The ONNX fuzzer's find: a ConvTranspose whose output_shape has fewer
// entries than its spatial rank was read before the list's start.
TEST(OnnxImport, AShortConvTransposeOutputShapeIsAnError) {
  const std::string path =
      std::string(LOCUS_TEST_INPUTS) +
      "/../../../fuzz/regressions/onnx-conv-transpose-short-output-shape.onnx";
  try {
    importOnnx(path, {});
    ADD_FAILURE() << "an output_shape of 1 entry for a 2-D ConvTranspose";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "(ConvTranspose): output_shape must have 2 or 4 entries, "
                  "has 1"),
              std::string::npos)
        << e.what();
  }
}

namespace {

/// A one-input model of opset 17 whose nodes each read x [3, 8] and give
/// one output, built with ONNX's own protobuf classes and written to a
/// file of this test's own.
class ActivationModel {
public:
  ActivationModel() {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(17);
    graph()->set_name("activations");
    value(graph()->add_input(), "x");
    // Clip's upper bound: a graph input, not an initializer.
    value(graph()->add_input(), "cap", {});
  }
  onnx::GraphProto *graph() { return model_.mutable_graph(); }
  onnx::NodeProto *node(const std::string &op, const std::string &out,
                        const std::vector<std::string> &inputs = {"x"}) {
    onnx::NodeProto *n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string &in : inputs)
      n->add_input(in);
    n->add_output(out);
    value(graph()->add_output(), out);
    return n;
  }
  static void attribute(onnx::NodeProto *n, const char *name, float v) {
    onnx::AttributeProto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  void constant(const std::string &name, float v) {
    onnx::TensorProto *t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
  }
  void constant(const std::string &name, int64_t v) {
    onnx::TensorProto *t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(v);
  }
  static void attribute(onnx::NodeProto *n, const char *name, int64_t v) {
    onnx::AttributeProto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string write() { return writeModel(model_, "activations"); }

private:
  static void value(onnx::ValueInfoProto *v, const std::string &name,
                    const std::vector<int64_t> &dims = {3, 8}) {
    v->set_name(name);
    auto *type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    auto *shape = type->mutable_shape();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
};

} // namespace

TEST(OnnxImport, ActivationsMatchTheirDefinitions) {
  ActivationModel m;
  auto *hs = m.node("HardSigmoid", "hard_sigmoid");
  ActivationModel::attribute(hs, "alpha", 0.3f);
  ActivationModel::attribute(hs, "beta", 0.4f);
  m.node("HardSwish", "hard_swish");
  ActivationModel::attribute(m.node("Elu", "elu"), "alpha", 0.7f);
  m.node("Softplus", "softplus");
  m.constant("lo", -2.5f);
  m.node("Clip", "clip", {"x", "lo", "cap"});
  std::string path = m.write();
  Graph g = importOnnx(path);
  std::remove(path.c_str());
  CompiledModel model = compile(g, {.policy = "cpu"});
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) // -8 .. 8, no value on a kink
    x[i] = -8.0f + 16.0f * (static_cast<float>(i) + 0.37f) / 24.0f;
  float cap = 1.75f;
  auto out = model.run({{"x", HostTensor::fromF32({3, 8}, x)},
                        {"cap", HostTensor::fromF32({}, {cap})}});
  using Fn = double (*)(double);
  std::pair<const char *, Fn> expected[] = {
      {"hard_sigmoid",
       [](double v) { return std::clamp(0.3 * v + 0.4, 0.0, 1.0); }},
      {"hard_swish",
       [](double v) { return v * std::clamp(v + 3.0, 0.0, 6.0) / 6.0; }},
      {"elu", [](double v) { return v > 0 ? v : 0.7 * std::expm1(v); }},
      {"softplus", [](double v) { return std::log1p(std::exp(v)); }},
      {"clip", [](double v) { return std::clamp(v, -2.5, 1.75); }}};
  for (const auto &[name, fn] : expected) {
    std::vector<float> y = out.at(name).f32;
    ASSERT_EQ(y.size(), x.size()) << name;
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], fn(x[i]), 1e-5 + 1e-5 * std::abs(fn(x[i])))
          << name << " at x = " << x[i];
  }
}

TEST(OnnxImport, CumSumMatchesItsDefinition) {
  ActivationModel m;
  m.constant("axis1", int64_t{1});
  m.constant("axis0", int64_t{0});
  m.constant("axis_last", int64_t{-1});
  m.node("CumSum", "inclusive", {"x", "axis1"});
  ActivationModel::attribute(m.node("CumSum", "exclusive", {"x", "axis1"}),
                             "exclusive", int64_t{1});
  ActivationModel::attribute(m.node("CumSum", "reverse", {"x", "axis0"}),
                             "reverse", int64_t{1});
  auto *both = m.node("CumSum", "reverse_exclusive", {"x", "axis_last"});
  ActivationModel::attribute(both, "reverse", int64_t{1});
  ActivationModel::attribute(both, "exclusive", int64_t{1});
  std::string path = m.write();
  Graph g = importOnnx(path);
  std::remove(path.c_str());
  CompiledModel model = compile(g, {.policy = "cpu"});
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(1.7f * static_cast<float>(i) + 0.3f) * 3.0f;
  auto out = model.run({{"x", HostTensor::fromF32({3, 8}, x)},
                        {"cap", HostTensor::fromF32({}, {0.0f})}});
  // The sum of x[r][k] over the k before (or after) c along the axis.
  auto want = [&](int r, int c, bool rows, bool exclusive, bool reverse) {
    int n = rows ? 3 : 8, at = rows ? r : c;
    double s = 0;
    for (int k = 0; k < n; ++k) {
      bool in = reverse ? (exclusive ? k > at : k >= at)
                        : (exclusive ? k < at : k <= at);
      if (in)
        s += x[static_cast<size_t>(rows ? k * 8 + c : r * 8 + k)];
    }
    return s;
  };
  struct Case {
    const char *name;
    bool rows, exclusive, reverse;
  } cases[] = {{"inclusive", false, false, false},
               {"exclusive", false, true, false},
               {"reverse", true, false, true},
               {"reverse_exclusive", false, true, true}};
  for (const Case &c : cases) {
    const std::vector<float> &y = out.at(c.name).f32;
    ASSERT_EQ(y.size(), x.size()) << c.name;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 8; ++k) {
        double w = want(r, k, c.rows, c.exclusive, c.reverse);
        EXPECT_NEAR(y[static_cast<size_t>(r * 8 + k)], w,
                    1e-5 + 1e-5 * std::abs(w))
            << c.name << " at [" << r << "][" << k << "]";
      }
  }
}

TEST(OnnxImport, StepsAndModMatchNumpy) {
  ActivationModel m;
  for (const char *op : {"Floor", "Ceil", "Round", "Sign"})
    m.node(op, op);
  m.constant("d", -1.25f);
  ActivationModel::attribute(m.node("Mod", "fmod", {"x", "d"}), "fmod",
                             int64_t{1});
  m.node("Mod", "python_mod", {"x", "d"});
  // Mod of two integers known while importing folds, with the divisor's
  // sign (-7 mod 3 = 2), as exporters compute padding from sizes.
  m.constant("a", int64_t{-7});
  m.constant("b", int64_t{3});
  onnx::NodeProto *mod = m.graph()->add_node();
  mod->set_op_type("Mod");
  mod->add_input("a");
  mod->add_input("b");
  mod->add_output("ab");
  onnx::NodeProto *cast = m.graph()->add_node();
  cast->set_op_type("Cast");
  cast->add_input("ab");
  cast->add_output("abf");
  ActivationModel::attribute(cast, "to", int64_t{onnx::TensorProto::FLOAT});
  m.node("Add", "shifted", {"x", "abf"});
  std::string path = m.write();
  Graph g = importOnnx(path);
  std::remove(path.c_str());
  CompiledModel model = compile(g, {.policy = "cpu"});
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) // halves, integers and between
    x[i] = -3.0f + 0.25f * static_cast<float>(i);
  auto out = model.run({{"x", HostTensor::fromF32({3, 8}, x)},
                        {"cap", HostTensor::fromF32({}, {0.0f})}});
  using Fn = double (*)(double);
  std::pair<const char *, Fn> expected[] = {
      {"Floor", [](double v) { return std::floor(v); }},
      {"Ceil", [](double v) { return std::ceil(v); }},
      {"Round", [](double v) { return std::nearbyint(v); }},
      {"Sign", [](double v) { return v > 0   ? 1.0
                                     : v < 0 ? -1.0
                                             : 0.0; }},
      {"fmod", [](double v) { return std::fmod(v, -1.25); }},
      {"python_mod",
       [](double v) {
         double r = std::fmod(v, -1.25);
         return r > 0 ? r - 1.25 : r;
       }},
      {"shifted", [](double v) { return v + 2.0; }}};
  for (const auto &[name, fn] : expected) {
    std::vector<float> y = out.at(name).f32;
    ASSERT_EQ(y.size(), x.size()) << name;
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(y[i], static_cast<float>(fn(x[i])))
          << name << " at x = " << x[i];
      // Zeros keep their sign (round(-0.25) is -0), as nearbyint's.
      EXPECT_EQ(std::signbit(y[i]), std::signbit(fn(x[i])))
          << name << " at x = " << x[i];
    }
  }
}

namespace {

onnx::NodeProto *addNode(onnx::GraphProto *g, const char *op,
                         const std::vector<std::string> &in, const char *out) {
  onnx::NodeProto *n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const std::string &i : in)
    n->add_input(i);
  n->add_output(out);
  return n;
}

/// A Cast of `in` to float.
void castToFloat(onnx::GraphProto *g, const char *in, const char *out) {
  onnx::AttributeProto *to = addNode(g, "Cast", {in}, out)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
}

/// `v` named `name`: f32 [batch, seq], both symbolic.
void symbolicValue(onnx::ValueInfoProto *v, const char *name) {
  v->set_name(name);
  auto *type = v->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("batch");
  type->mutable_shape()->add_dim()->set_dim_param("seq");
}

/// A model of opset 17 over x [batch, seq] (symbolic) whose nodes compute
/// from Shape(x): t is the sequence length, `ops` what follows.
std::string symbolicModel(const std::string &name,
                          void (*ops)(onnx::GraphProto *)) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name(name);
  symbolicValue(g->add_input(), "x");
  auto ints = [&](const char *n, const std::vector<int64_t> &values,
                  bool vector) {
    onnx::TensorProto *t = g->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::INT64);
    if (vector)
      t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      t->add_int64_data(v);
  };
  ints("zero", {0}, false);
  ints("one", {1}, false);
  ints("axis0", {0}, true); // [0]
  ints("axis1", {1}, true); // [1]
  addNode(g, "Shape", {"x"}, "shape");
  addNode(g, "Gather", {"shape", "one"}, "t");
  ops(g);
  symbolicValue(g->add_output(), "y");
  return writeModel(model, name);
}

std::string importError(const std::string &path) {
  try {
    (void)importOnnx(path, {.dynamicSizes = {{"batch", 4}, {"seq", 8}}});
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(OnnxImport, ValuesComputedFromADynamicSizeAreKeptOrRefused) {
  // Range(0, seq - 1): seq - 1 holds at the bound only.
  std::string range = symbolicModel("range", [](onnx::GraphProto *g) {
    addNode(g, "Sub", {"t", "one"}, "t1");
    addNode(g, "Range", {"zero", "t1", "one"}, "y");
  });
  EXPECT_NE(importError(range).find(
                "node 'y' (Range): a Range over a dynamic size other than "
                "Range(0, size, 1)"),
            std::string::npos)
      << importError(range);
  // The length as a value (x * seq) would be the bound's.
  std::string scaled = symbolicModel("scaled", [](onnx::GraphProto *g) {
    castToFloat(g, "t", "tf");
    addNode(g, "Mul", {"x", "tf"}, "y");
  });
  EXPECT_NE(importError(scaled).find(
                "'tf' is computed from a dynamic size and used as a value"),
            std::string::npos)
      << importError(scaled);
  // seq - 1 as a shape, a slice's end, or an expansion's size.
  std::string filled = symbolicModel("filled", [](onnx::GraphProto *g) {
    addNode(g, "Sub", {"t", "one"}, "t1");
    addNode(g, "Unsqueeze", {"t1", "axis0"}, "dims");
    addNode(g, "ConstantOfShape", {"dims"}, "y");
  });
  EXPECT_NE(importError(filled).find(
                "(ConstantOfShape): the shape is computed from a dynamic size "
                "other than the size itself"),
            std::string::npos)
      << importError(filled);
  std::string sliced = symbolicModel("sliced", [](onnx::GraphProto *g) {
    addNode(g, "Sub", {"t", "one"}, "t1");
    addNode(g, "Unsqueeze", {"t1", "axis0"}, "end");
    addNode(g, "Slice", {"x", "axis0", "end", "axis1"}, "y");
  });
  EXPECT_NE(importError(sliced).find(
                "(Slice): slices with bounds computed from a dynamic size "
                "other than [0, size)"),
            std::string::npos)
      << importError(sliced);
  // Range(0, seq - 0 + 1 - 1) is the length again: positions [seq].
  std::string positions = symbolicModel("positions", [](onnx::GraphProto *g) {
    addNode(g, "Sub", {"t", "zero"}, "t0");
    addNode(g, "Mul", {"t0", "one"}, "t1");
    addNode(g, "Range", {"zero", "t1", "one"}, "r");
    castToFloat(g, "r", "rf");
    addNode(g, "Add", {"x", "rf"}, "y");
  });
  Graph imported =
      importOnnx(positions, {.dynamicSizes = {{"batch", 4}, {"seq", 8}}});
  CompiledModel m = compile(imported, {.policy = "cpu"});
  std::vector<float> xs(3 * 5, 1.0f);
  HostTensor y = m.run({{"x", HostTensor::fromF32({3, 5}, xs)}}).at("y");
  ASSERT_EQ(y.shape, (Shape{3, 5}));
  for (size_t k = 0; k < y.f32.size(); ++k)
    EXPECT_EQ(y.f32[k], 1.0f + static_cast<float>(k % 5)) << k;
}

TEST(OnnxImport, WindowsAtTheEndOfADynamicSizeFollowTheRun) {
  // y = Gather(x, -1, axis 1) + ReduceSum(Slice(x, [-3], [INT64_MAX],
  // [1]), [1]): the last step and the sum of the last three at every
  // length, as a decoder's export picks its last token.
  std::string path = symbolicModel("ends", [](onnx::GraphProto *g) {
    auto ints = [&](const char *n, int64_t value, bool vector) {
      onnx::TensorProto *t = g->add_initializer();
      t->set_name(n);
      t->set_data_type(onnx::TensorProto::INT64);
      if (vector)
        t->add_dims(1);
      t->add_int64_data(value);
    };
    auto attr = [](onnx::NodeProto *node, const char *name, int64_t value) {
      onnx::AttributeProto *a = node->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    };
    ints("last", -1, false);
    ints("from", -3, true);
    ints("to", std::numeric_limits<int64_t>::max(), true);
    attr(addNode(g, "Gather", {"x", "last"}, "l"), "axis", 1);
    addNode(g, "Slice", {"x", "from", "to", "axis1"}, "s");
    attr(addNode(g, "ReduceSum", {"s", "axis1"}, "r"), "keepdims", 0);
    addNode(g, "Add", {"l", "r"}, "y");
  });
  Graph imported =
      importOnnx(path, {.dynamicSizes = {{"batch", 4}, {"seq", 8}}});
  CompiledModel m = compile(imported, {.policy = "cpu"});
  for (int64_t n : {3, 5, 8}) {
    std::vector<float> xs(static_cast<size_t>(2 * n));
    for (size_t k = 0; k < xs.size(); ++k)
      xs[k] = static_cast<float>(k * k % 7) - 2.5f;
    HostTensor y = m.run({{"x", HostTensor::fromF32({2, n}, xs)}}).at("y");
    ASSERT_EQ(y.shape, (Shape{2})) << n;
    for (int64_t b = 0; b < 2; ++b) {
      auto at = [&](int64_t j) { return xs[static_cast<size_t>(b * n + j)]; };
      EXPECT_FLOAT_EQ(y.f32[static_cast<size_t>(b)],
                      at(n - 1) + at(n - 3) + at(n - 2) + at(n - 1))
          << "batch " << b << " at length " << n;
    }
  }
}

TEST(OnnxImport, AFloat16ModelRunsInF16WithF32MasterWeights) {
  // x (f16) @ W + B, ReLU, softmax, Cast to float: an ONNX model exported
  // in f16. Its initializers become f32 state (exact) cast to f16 once per
  // step; each op rounds its result to f16 once (the product after an f32
  // sum), as onnx's reference runtime and PyTorch do.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("half");
  auto addValue = [](onnx::ValueInfoProto *v, const std::string &name, int type,
                     const std::vector<int64_t> &dims) {
    v->set_name(name);
    auto *tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : dims)
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  addValue(graph->add_input(), "x", onnx::TensorProto::FLOAT16, {4, 8});
  addValue(graph->add_output(), "y", onnx::TensorProto::FLOAT, {4, 3});
  addValue(graph->add_output(), "h", onnx::TensorProto::FLOAT16, {4, 3});
  std::vector<float> w(24), b(3), x(32);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = half::fromF16Bits(half::f16Bits(std::sin(0.7f * float(i))));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = half::fromF16Bits(half::f16Bits(0.1f * float(i) - 0.05f));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = half::fromF16Bits(half::f16Bits(std::cos(1.3f * float(i))));
  auto initializer = [&](const std::string &name,
                         const std::vector<int64_t> &dims,
                         const std::vector<float> &values) {
    onnx::TensorProto *t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : dims)
      t->add_dims(d);
    std::string raw;
    for (float v : values) {
      uint16_t bits = half::f16Bits(v);
      raw.append(reinterpret_cast<const char *>(&bits), 2);
    }
    t->set_raw_data(raw);
  };
  initializer("W", {8, 3}, w);
  initializer("B", {3}, b);
  auto node = [&](const std::string &op, const std::vector<std::string> &in,
                  const std::string &out) {
    onnx::NodeProto *n = graph->add_node();
    n->set_op_type(op);
    n->set_name(op);
    for (const std::string &i : in)
      n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("MatMul", {"x", "W"}, "xw");
  node("Add", {"xw", "B"}, "z");
  node("Relu", {"z"}, "h");
  node("Softmax", {"h"}, "s");
  onnx::AttributeProto *to = node("Cast", {"s"}, "y")->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  std::string path = writeModel(model, "half");
  Graph g = importOnnx(path);
  std::remove(path.c_str());
  ASSERT_EQ(g.parameters().size(), 2u);
  EXPECT_EQ(g.initialValue(g.parameters()[0]), w); // f32 state, exact
  CompiledModel m = compile(g);
  auto out = m.run({{"x", HostTensor::fromF32({4, 8}, x, DType::f16)}});
  ASSERT_EQ(out.at("h").dtype, DType::f16);
  ASSERT_EQ(out.at("y").dtype, DType::f32);
  auto r16 = [](double v) {
    return double(half::fromF16Bits(half::f16Bits(static_cast<float>(v))));
  };
  for (int i = 0; i < 4; ++i) {
    double h[3], total = 0;
    for (int o = 0; o < 3; ++o) {
      double acc = 0;
      for (int k = 0; k < 8; ++k)
        acc += double(x[i * 8 + k]) * w[k * 3 + o];
      h[o] = std::max(0.0, r16(r16(acc) + b[o]));
      total += std::exp(h[o]);
    }
    for (int o = 0; o < 3; ++o) {
      double ulp = std::ldexp(std::max(std::fabs(h[o]), 1e-4), -10);
      EXPECT_NEAR(out.at("h").f32[i * 3 + o], h[o], ulp) << i << "," << o;
      double s = r16(std::exp(h[o]) / total);
      EXPECT_NEAR(out.at("y").f32[i * 3 + o], s, std::ldexp(s, -9))
          << i << "," << o;
    }
  }
}
