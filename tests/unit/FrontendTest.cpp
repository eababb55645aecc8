// FrontendTest.cpp - recording: source locations, errors at the user's line,
// the graph left unchanged on failure, devices, names and initialisation.

#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <regex>
#include <string>

using namespace locus;

// These tests compare an Error's line with __LINE__ written on the same line
// as the call that records; a formatter that splits those lines breaks them.
// clang-format off
namespace {

/// How many ops named `name` (e.g. "locus.broadcast") the graph holds.
size_t countOps(const Graph &g, const std::string &name) {
  std::string text = g.str();
  std::regex op("= " + std::regex_replace(name, std::regex("\\."), "\\.") +
                " |^\\s*" + name + " ");
  size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    n += std::regex_search(line, op);
  return n;
}

/// Runs `record`, expects a locus::Error at `line` of this file whose message
/// contains `needle`, and checks the graph did not change.
template <typename F>
void expectUserError(Graph &g, F &&record, int line, const std::string &needle) {
  std::string before = g.str({.locations = true});
  size_t opsBefore = g.numOps();
  try {
    record();
    ADD_FAILURE() << "expected a locus::Error containing '" << needle << "'";
  } catch (const Error &e) {
    EXPECT_EQ(e.line(), static_cast<unsigned>(line)) << e.what();
    EXPECT_NE(std::string(e.file()).find("FrontendTest.cpp"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
    // what() is "file:line:col: error: message", like a compiler's.
    EXPECT_NE(std::string(e.what()).find(":" + std::to_string(line) + ":"),
              std::string::npos);
  }
  EXPECT_EQ(g.numOps(), opsBefore);
  EXPECT_EQ(g.str({.locations = true}), before);
}

TEST(Locations, EveryOpCarriesTheCallersLine) {
  Graph g("locs");
  auto x = g.input("x", {4, 3}); int inputLine = __LINE__;
  auto y = exp(x); int expLine = __LINE__;
  auto z = y + x; int addLine = __LINE__;
  auto w = z * 2.0f; int scaleLine = __LINE__;
  g.output("w", w); int outputLine = __LINE__;
  std::string text = g.str({.locations = true});
  for (int line : {inputLine, expLine, addLine, scaleLine, outputLine})
    EXPECT_NE(text.find("FrontendTest.cpp\":" + std::to_string(line) + ":"),
              std::string::npos)
        << "line " << line << " missing from\n" << text;
  // Without locations the text has none of them.
  EXPECT_EQ(g.str().find("FrontendTest.cpp"), std::string::npos);
}

TEST(Locations, LayersRecordWhereTheyAreBuiltAndCalled) {
  Graph g("layers");
  auto x = g.input("x", {8, 10});
  nn::Linear fc(g, 10, 3); int builtLine = __LINE__;
  auto y = fc(x); int calledLine = __LINE__;
  (void)y;
  std::string text = g.str({.locations = true});
  // Parameters: where the layer is built. The linear op: a callsite location,
  // the layer's line "at" the caller's line.
  std::regex callsite("#loc[0-9]+ = loc\\(\"[^\"]*FrontendTest.cpp\":" +
                      std::to_string(builtLine) + ":[0-9]+\\)");
  EXPECT_TRUE(std::regex_search(text, callsite)) << text;
  EXPECT_NE(text.find("callsite("), std::string::npos) << text;
  EXPECT_NE(text.find(":" + std::to_string(calledLine) + ":"),
            std::string::npos);
}

namespace {
/// A user's block named by its path, around a named Linear.
class NamedBlock : public nn::Module {
public:
  NamedBlock(Graph &g, const std::string &name)
      : Module(name), fc_(g, 4, 4, {.name = name + ".fc"}) {}
  Tensor forward(const Tensor &x, Here loc) const override {
    return relu(fc_(x, loc), loc);
  }

private:
  nn::Linear fc_;
};

/// A user's module without a name around a named block.
class UnnamedOuter : public nn::Module {
public:
  explicit UnnamedOuter(Graph &g) : block_(g, "blocks.0") {}
  Tensor forward(const Tensor &x, Here loc) const override {
    return tanh(block_(x, loc), loc);
  }

private:
  NamedBlock block_;
};
} // namespace

TEST(Locations, OpsCarryTheInnermostNamedLayersPath) {
  Graph g("paths");
  auto x = g.input("x", {2, 4});
  UnnamedOuter outer(g);
  EXPECT_EQ(outer.name(), "");
  nn::Linear head(g, 4, 2, {.name = "head"});
  EXPECT_EQ(head.name(), "head");
  nn::Linear unnamed(g, 2, 2);
  EXPECT_EQ(unnamed.name(), "linear0") << "named after its parameters";
  auto y = unnamed(head(outer(x)));
  g.output("y", y);
  std::string text = g.str({.locations = true});
  // linear inside blocks.0.fc, relu in blocks.0 itself; the outer module's
  // tanh has no named layer around it: a plain call site.
  for (const char *path : {"blocks.0.fc", "blocks.0", "head", "linear0"})
    EXPECT_NE(text.find(std::string("loc(\"") + path + "\"(#loc"),
              std::string::npos)
        << path << " missing from\n" << text;
  std::regex tanhOp("locus.tanh[^\n]*loc\\((#loc[0-9]+)\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, tanhOp)) << text;
  std::regex plain(m[1].str() + " = loc\\(callsite\\(#loc[0-9]+ at ");
  EXPECT_TRUE(std::regex_search(text, plain)) << text;
}

TEST(Locations, ErrorsInsideALayerNameTheLayer) {
  Graph g("inside");
  auto x = g.input("x", {16, 1, 28, 28});
  nn::Sequential net{nn::Conv2d(g, 1, 6, {5}), nn::Flatten(),
                     nn::Linear(g, 6 * 28 * 28, 10)}; int fcLine = __LINE__;
  try {
    net(x); int callLine = __LINE__;
    ADD_FAILURE() << "a 24x24 conv output does not fit Linear(6*28*28)";
    (void)callLine;
  } catch (const Error &e) {
    // The user's call is the primary line; the layer's line is named too.
    EXPECT_EQ(e.line(), static_cast<unsigned>(__LINE__ - 5)) << e.what();
    EXPECT_NE(e.message().find("has 3456 features but weight [10, 4704]"),
              std::string::npos) << e.what();
    EXPECT_NE(e.message().find("(in layer 'linear0' built at " +
                               std::string(e.file()) + ":" +
                               std::to_string(fcLine) + ")"),
              std::string::npos) << e.what();
  }
  // The failed call left nothing behind, and the layer stack is empty again:
  // an op recorded now has a plain location.
  auto y = relu(x); int reluLine = __LINE__;
  (void)y;
  std::string text = g.str({.locations = true});
  EXPECT_EQ(text.find("locus.conv2d"), std::string::npos) << text;
  EXPECT_NE(text.find("FrontendTest.cpp\":" + std::to_string(reluLine)),
            std::string::npos);
}

TEST(Errors, ShapeMismatchNamesTheLineAndBothShapes) {
  Graph g("errors");
  auto a = g.input("a", {8, 16});
  auto b = g.input("b", {15, 4});
  expectUserError(g, [&] { matmul(a, b); }, __LINE__,
                  "cannot multiply [8, 16] by [15, 4]");
  auto c = g.input("c", {100, 3});
  auto d = g.input("d", {100, 2});
  expectUserError(g, [&] { (void)(c + d); }, __LINE__,
                  "add: operands of shapes [100, 3] and [100, 2] do not "
                  "broadcast (dimension 1: 3 vs 2)");
  expectUserError(g, [&] { mse_loss(c, d); }, __LINE__,
                  "input [100, 3] and target [100, 2] have different shapes");
}

TEST(Errors, WrongDtypeIsReportedWithTheType) {
  Graph g("dtype");
  auto labels = g.input("labels", {32}, {.dtype = DType::i64});
  auto logits = g.input("logits", {32, 10});
  auto floats = g.input("floats", {32});
  expectUserError(g, [&] { exp(labels); }, __LINE__,
                  "exp expects f32 tensors, but its input is i64 [32]; "
                  "cast it to f32 first (locus::cast in C++, locus.cast in "
                  "Python)");
  expectUserError(g, [&] { cross_entropy(logits, floats); }, __LINE__,
                  "cross_entropy expects i64 tensors, but the labels is f32");
  // Comparisons take any one dtype; mixing needs a cast, and the message
  // has no MLIR in it.
  auto ids = g.input("ids", {32}, {.dtype = DType::i64});
  EXPECT_EQ(eq(labels, ids).dtype(), DType::i1);
  expectUserError(g, [&] { eq(labels, floats); }, __LINE__,
                  "compares i64 [32] with f32 [32]");
  expectUserError(g, [&] { matmul(labels, ids); }, __LINE__,
                  "matmul expects f32 tensors, but the first operand is i64");
}

TEST(Errors, BadConvolutionsAndPools) {
  Graph g("conv");
  auto x = g.input("x", {2, 4, 9, 9});
  auto w = g.input("w", {6, 3, 3, 3});
  expectUserError(g, [&] { conv2d(x, w); }, __LINE__,
                  "expects 3 input channels but input [2, 4, 9, 9] has 4");
  auto w2 = g.input("w2", {6, 4, 3, 3});
  expectUserError(g, [&] { conv2d(x, w2, {}, {.stride = {0, 1}}); }, __LINE__,
                  "must be positive");
  int line = __LINE__ + 1;
  expectUserError(g, [&] { conv2d(x, w2, {}, {.stride = {1, 1, 1}}); }, line,
                  "stride has 3 entries; expected 2");
  expectUserError(
      g, [&] { nn::Conv2d(g, 4, 6, {3}, {.groups = 4}); }, __LINE__,
      "groups 4 must divide in_channels 4 and out_channels 6");
  expectUserError(g, [&] { max_pool2d(x, {.kernelSize = {10, 10}}); }, __LINE__,
                  "kernel_size [10, 10] does not fit input [2, 4, 9, 9]");
  // Ceil mode and uncounted padding compose a pad, a pool and a scale:
  // their errors name the call, and a failed one records nothing.
  Pool2dParams ceil{.kernelSize = {10, 10}, .ceilMode = true};
  Pool2dParams uneven{.kernelSize = {3, 3}, .padding = {1, -1, 1, 0}};
  expectUserError(g, [&] { avg_pool2d(x, ceil); }, __LINE__,
                  "avg_pool2d: kernel_size [10, 10] does not fit input");
  expectUserError(g, [&] { max_pool2d(x, uneven); }, __LINE__,
                  "max_pool2d: padding [1, -1, 1, 0] must be 2 or 4 sizes");
  // ONNX's padding may pass half the kernel: windows of padding alone give
  // -inf to a max, not an error.
  Pool2dParams sparse{
      .kernelSize = {1, 1}, .stride = {2, 2}, .padding = {1, 1, 1, 1}};
  EXPECT_EQ(max_pool2d(x, sparse).shape(), (Shape{2, 4, 6, 6}));
  auto wt = g.input("wt", {4, 3, 3, 3});
  ConvTranspose2dParams wide{.stride = {2, 2}, .outputPadding = {2, 0}};
  expectUserError(g, [&] { conv_transpose2d(x, wt, {}, wide); }, __LINE__,
                  "conv_transpose2d: output_padding [2, 0] must be smaller "
                  "than the stride or the dilation");
  expectUserError(g, [&] { conv_transpose2d(x, w2); }, __LINE__,
                  "conv_transpose2d: weight [6, 4, 3, 3] and groups 1 do not "
                  "fit input [2, 4, 9, 9]");
}

TEST(Errors, FailedCompositesRecordNothing) {
  Graph g("composite");
  auto a = g.input("a", {4, 1});
  auto b = g.input("b", {1, 5});
  auto labels = g.input("labels", {4, 5}, {.dtype = DType::i64});
  // where() records broadcasts of a and b before select rejects the i64
  // operand: the broadcasts must go too.
  auto mask = gt(a, b);
  size_t broadcasts = countOps(g, "locus.broadcast");
  expectUserError(g, [&] { where(mask, a, labels); }, __LINE__,
                  "where chooses between f32 and i64 values");
  // A composite that fails halfway (pad's second pair) records nothing.
  size_t before = g.numOps();
  expectUserError(g, [&] { pad(a, {1, 1, -1, 0}); }, __LINE__,
                  "negative padding");
  expectUserError(g, [&] { layer_norm(a, {5}); }, __LINE__,
                  "normalized_shape [5] is not the trailing dimensions of "
                  "input [4, 1]");
  EXPECT_EQ(g.numOps(), before);
  EXPECT_EQ(countOps(g, "locus.broadcast"), broadcasts);
}

TEST(Errors, ShapeCompositesSayWhatIsWrongInTheUsersTerms) {
  Graph g("shapes");
  auto x = g.input("x", {2, 3, 4});
  auto y = g.input("y", {2, 4, 4});
  expectUserError(g, [&] { squeeze(x, 1); }, __LINE__,
                  "squeeze: dimension 1 of [2, 3, 4] has size 3, not 1");
  expectUserError(g, [&] { squeeze(x, 3); }, __LINE__, "out of range");
  expectUserError(g, [&] { expand(x, {3, 4}); }, __LINE__,
                  "expand: [3, 4] has fewer dimensions than [2, 3, 4]");
  expectUserError(g, [&] { expand(x, {-1, 2, 3, 4}); }, __LINE__,
                  "-1 is not allowed for a new leading dimension");
  expectUserError(g, [&] { expand(x, {2, 5, 4}); }, __LINE__, "[2, 5, 4]");
  expectUserError(g, [&] { split(x, 0, 1); }, __LINE__,
                  "split: size 0 must be positive");
  expectUserError(g, [&] { chunk(x, -2, 1); }, __LINE__,
                  "chunk: chunks -2 must be positive");
  expectUserError(g, [&] { split(x, 2, 5); }, __LINE__, "out of range");
  expectUserError(g, [&] { stack({}); }, __LINE__,
                  "stack needs at least one tensor");
  expectUserError(g, [&] { stack({x, y}); }, __LINE__,
                  "stack: tensors of shapes [2, 3, 4] and [2, 4, 4] differ");
  expectUserError(g, [&] { pad(x, {1, 1, 1, 1, 1, 1, 1, 1}); }, __LINE__,
                  "pad: 8 entries");
  expectUserError(g, [&] { argmax(x, 3); }, __LINE__, "out of range");
  auto flatIndex = g.input("flat", {2, 3}, {.dtype = DType::i64});
  auto bigIndex = g.input("big", {3, 3, 4}, {.dtype = DType::i64});
  expectUserError(g, [&] { gather(x, 1, flatIndex); }, __LINE__,
                  "gather: index [2, 3] must have the rank of input [2, 3, 4]");
  expectUserError(g, [&] { gather(x, 1, bigIndex); }, __LINE__,
                  "is larger than input [2, 3, 4] in dimension 0");
  expectUserError(g, [&] { gather(x, 1, y); }, __LINE__,
                  "gather takes an i64 or i32 index, got f32 [2, 4, 4]");
  expectUserError(g, [&] { adaptive_avg_pool2d(x, {2, 2}); }, __LINE__,
                  "adaptive_avg_pool2d takes an NCHW input");
}

TEST(Errors, ActivationsNormsAndAttention) {
  Graph g("layers");
  auto x = g.input("x", {2, 6, 3});
  expectUserError(g, [&] { clamp(x, std::nullopt, std::nullopt); }, __LINE__,
                  "clamp needs at least one of min and max");
  expectUserError(g, [&] { clamp(x, 2.0, 1.0); }, __LINE__,
                  "clamp: min 2 is above max 1");
  expectUserError(g, [&] { hardtanh(x, 2.0, 1.0); }, __LINE__,
                  "hardtanh: min_val 2 is above max_val 1");
  expectUserError(g, [&] { nn::Hardtanh(3.0, -3.0)(x); }, __LINE__,
                  "hardtanh: min_val 3 is above max_val -3");
  expectUserError(g, [&] { softplus(x, 0.0); }, __LINE__,
                  "softplus: beta 0 must be a finite number other than 0");
  expectUserError(g, [&] { group_norm(x, 4); }, __LINE__,
                  "group_norm: 4 groups do not divide 6 channels");
  auto one = g.input("one", {1, 6, 1});
  auto rm = g.input("rm", {6});
  auto rv = g.input("rv", {6});
  expectUserError(g, [&] { batch_norm(one, rm, rv, {}, {}, true); }, __LINE__,
                  "batch_norm in training needs more than one value per "
                  "channel, got input [1, 6, 1]");
  expectUserError(g, [&] { batch_norm(x, {}, {}, {}, {}, false); }, __LINE__,
                  "batch_norm in eval mode needs running_mean and running_var");
  auto badMomentum = [&] { batch_norm(x, rm, rv, {}, {}, true, 1.5); };
  expectUserError(g, badMomentum, __LINE__ - 1, "momentum must be in [0, 1]");
  auto q = g.input("q", {2, 4, 8});
  auto k = g.input("k", {2, 5, 7});
  expectUserError(g, [&] { scaled_dot_product_attention(q, k, k); }, __LINE__,
                  "scaled_dot_product_attention takes q [..., L, E], k [..., "
                  "S, E] and v [..., S, Ev], got");
  auto mask = g.input("mask", {4, 4});
  AttentionOptions both{.attnMask = mask, .isCausal = true};
  expectUserError(g, [&] { scaled_dot_product_attention(q, q, q, both); },
                  __LINE__ - 1, "give attn_mask or is_causal, not both");
}

TEST(Nn, LayerShapeErrorsNameTheLayer) {
  Graph g("cells");
  expectUserError(g, [&] { nn::MultiheadAttention(g, 10, 3); }, __LINE__,
                  "MultiheadAttention(10, 3): num_heads must divide embed_dim");
  expectUserError(g, [&] { nn::GroupNorm(g, 4, 6); }, __LINE__,
                  "GroupNorm(4, 6): num_groups must divide num_channels");
  expectUserError(g, [&] { nn::Embedding(g, 0, 4); }, __LINE__,
                  "Embedding(0, 4): sizes must be positive");
  expectUserError(g, [&] { nn::LSTMCell(g, 4, 0); }, __LINE__,
                  "sizes must be positive");
  nn::TransformerEncoderLayerOptions swish{.activation = "swish"};
  expectUserError(g, [&] { nn::TransformerEncoderLayer(g, 8, 2, swish); },
                  __LINE__ - 1, "activation is 'relu' or 'gelu', not 'swish'");
  nn::TransformerEncoderLayerOptions noFeedforward{.dimFeedforward = 0};
  expectUserError(g,
                  [&] { nn::TransformerEncoderLayer(g, 8, 2, noFeedforward); },
                  __LINE__ - 1, "dim_feedforward must be positive");
  nn::LSTMCell cell(g, 4, 3, {.name = "cell"});
  auto x = g.input("x", {2, 5});
  auto h = g.input("h", {2, 3});
  expectUserError(g, [&] { cell(x, h, h); }, __LINE__, "takes x [N, 4], got");
  auto x4 = g.input("x4", {2, 4});
  auto wrongState = g.input("h4", {2, 4});
  expectUserError(g, [&] { cell(x4, wrongState, h); }, __LINE__,
                  "takes a state [2, 3], got");
  nn::MultiheadAttention attn(g, 8, 2, {.batchFirst = true, .name = "attn"});
  auto flat = g.input("flat", {2, 8});
  expectUserError(g, [&] { attn(flat, flat, flat); }, __LINE__,
                  "MultiheadAttention takes [batch, seq");
  auto kv = g.input("kv", {2, 3, 8});
  auto kv2 = g.input("kv2", {2, 4, 8});
  auto query = g.input("query", {2, 5, 8});
  expectUserError(g, [&] { attn(query, kv, kv2); }, __LINE__,
                  "MultiheadAttention: key [2, 3, 8] and value [2, 4, 8] "
                  "differ");
}

TEST(Errors, ACompositeCallIsNamedNotTheOpsItRecords) {
  // masked_fill records a where, expand a broadcast, std a var,
  // logsumexp a max and a sum: their errors name the user's call.
  Graph g("composites");
  auto x = g.input("x", {4, 8});
  auto y = g.input("y", {3, 5});
  expectUserError(g, [&] { masked_fill(x, y, 0.0); }, __LINE__,
                  "masked_fill expects i1 tensors, but the mask is f32 [3, 5]");
  expectUserError(g, [&] { expand(x, {3, 8}); }, __LINE__,
                  "expand: cannot broadcast [4, 8] to [3, 8]");
  expectUserError(g, [&] { locus::std(x, {7}); }, __LINE__,
                  "std: axis 7 is out of range for [4, 8]");
  expectUserError(g, [&] { logsumexp(x, {3}); }, __LINE__,
                  "logsumexp: axis 3 is out of range for a tensor of shape "
                  "[4, 8]");
  // Outside a composite, the op names itself again.
  expectUserError(g, [&] { sum(x, {3}); }, __LINE__, "sum: axis 3");
}

TEST(Errors, ReshapeAndAxes) {
  Graph g("reshape");
  auto x = g.input("x", {3, 5});
  expectUserError(g, [&] { reshape(x, {4, -1}); }, __LINE__,
                  "cannot reshape [3, 5] (15 elements) to [4, -1]");
  expectUserError(g, [&] { reshape(x, {-1, -1}); }, __LINE__,
                  "only one dimension may be -1");
  expectUserError(g, [&] { sum(x, {-3}); }, __LINE__,
                  "sum: axis -3 is out of range for a tensor of shape [3, 5]");
  expectUserError(g, [&] { softmax(x, 2); }, __LINE__,
                  "softmax: axis 2 is out of range");
  expectUserError(g, [&] { slice(x, 1, 0, 4, 0); }, __LINE__,
                  "slice step must be positive");
}

TEST(Errors, NamesShapesAndHandles) {
  Graph g("names");
  auto x = g.input("x", {4}); int firstLine = __LINE__;
  expectUserError(g, [&] { g.input("x", {4}); }, __LINE__,
                  "input name 'x' is already used at");
  try {
    g.parameter("x", {4}, Init::zeros());
    ADD_FAILURE();
  } catch (const Error &e) {
    EXPECT_NE(e.message().find("FrontendTest.cpp:" + std::to_string(firstLine)),
              std::string::npos)
        << e.what();
  }
  g.output("y", x);
  expectUserError(g, [&] { g.output("y", x); }, __LINE__,
                  "output name 'y' is already used");
  expectUserError(g, [&] { g.input("", {4}); }, __LINE__,
                  "needs a non-empty name");
  expectUserError(g, [&] { g.input("neg", {4, -2}); }, __LINE__,
                  "shape [4, -2] has a negative dimension");
  Shape huge{int64_t{1} << 40, int64_t{1} << 30};
  expectUserError(g, [&] { g.input("huge", huge); }, __LINE__,
                  "shape [1099511627776, 1073741824] needs more than 2^48 "
                  "bytes (256 TiB); no device holds it");
  expectUserError(g, [&] { g.input("deep", Shape(100, 1)); }, __LINE__,
                  "shape of rank 100 has rank 100; Locus supports tensors of "
                  "rank up to 64");
  expectUserError(g, [&] { relu(Tensor()); }, __LINE__, "empty Tensor");
  Graph other("other");
  auto foreign = other.input("f", {4});
  expectUserError(g, [&] { (void)(x + foreign); }, __LINE__,
                  "uses a tensor of graph 'other' in graph 'names'");
  expectUserError(g, [&] { g.constant({2, 2}, {1, 2, 3}); }, __LINE__,
                  "needs 4 values, got 3");
  expectUserError(
      g, [&] { g.parameter("u", {2}, Init::uniform(1.0, -1.0, 0)); }, __LINE__,
      "needs a lower bound that is not above the upper");
}

TEST(RecordedDevices, ParseAndPrint) {
  EXPECT_EQ(Device::parse("cpu"), cpu());
  EXPECT_EQ(Device::parse("cuda"), cuda(0));
  EXPECT_EQ(Device::parse("cuda:3").index(), 3);
  EXPECT_EQ(cuda(2).str(), "cuda:2");
  EXPECT_EQ(cpu().str(), "cpu");
  for (const char *bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error &e) {
      EXPECT_NE(e.message().find("unknown device"), std::string::npos);
      EXPECT_EQ(e.line(), static_cast<unsigned>(__LINE__ - 4));
    }
  }
  EXPECT_THROW(cuda(-1), Error);
}

TEST(RecordedDevices, MovesAndPinsAreRecorded) {
  Graph g("devices");
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2}, {.device = cuda(0)});
  auto w = g.parameter("w", {2, 10}, Init::zeros(), {.device = cuda(1)});
  auto xg = x.to(cuda(0));
  auto back = linear(xg, w).to(cpu());
  EXPECT_EQ(back.shape(), (Shape{100, 2}));
  std::string text = g.str();
  EXPECT_NE(text.find("locus.input \"y\" : tensor<100x2xf32> on <cuda:0>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("init <full(0.0)> on <cuda:1>"), std::string::npos);
  EXPECT_NE(text.find("locus.to <cuda:0>, %x"), std::string::npos);
  EXPECT_NE(text.find("locus.to <cpu>,"), std::string::npos);
  (void)y;
}

TEST(Broadcasting, IsExplicitAndOnlyWhereNeeded) {
  Graph g("broadcast");
  auto x = g.input("x", {100, 2});
  auto bias = g.input("bias", {2});
  auto same = g.input("same", {100, 2});
  auto r = x + bias;
  EXPECT_EQ(r.shape(), (Shape{100, 2}));
  EXPECT_EQ(countOps(g, "locus.broadcast"), 1u);
  (void)(x - same);
  EXPECT_EQ(countOps(g, "locus.broadcast"), 1u);
  auto col = g.input("col", {4, 1});
  auto row = g.input("row", {1, 5});
  EXPECT_EQ((col * row).shape(), (Shape{4, 5}));
  EXPECT_EQ(countOps(g, "locus.broadcast"), 3u);
  // Scalars: a constant, broadcast to the tensor.
  EXPECT_EQ((x / 4.0f).shape(), (Shape{100, 2}));
  EXPECT_EQ(countOps(g, "locus.constant"), 1u);
  EXPECT_EQ((-x).shape(), (Shape{100, 2}));
}

TEST(Init, LayersFollowPyTorchsBoundsDeterministically) {
  auto record = [](uint64_t seed) {
    Graph g("init");
    g.manual_seed(seed);
    nn::Linear fc(g, 10, 2);
    nn::Conv2d conv(g, 3, 16, {3});
    return std::make_tuple(g.initialValue(fc.weight()), g.initialValue(fc.bias()),
                           g.initialValue(conv.weight()));
  };
  auto [w1, b1, c1] = record(0);
  auto [w2, b2, c2] = record(0);
  auto [w3, b3, c3] = record(1);
  EXPECT_EQ(w1, w2);
  EXPECT_EQ(c1, c2);
  EXPECT_NE(w1, w3);
  EXPECT_NE(w1, b1) << "weight and bias must draw different seeds";
  ASSERT_EQ(w1.size(), 20u);
  ASSERT_EQ(c1.size(), 16u * 3 * 3 * 3);
  const double linearBound = 1 / std::sqrt(10.0), convBound = 1 / std::sqrt(27.0);
  for (float v : w1)
    EXPECT_LT(std::abs(v), linearBound);
  for (float v : b1)
    EXPECT_LT(std::abs(v), linearBound);
  double sq = 0;
  for (float v : c1) {
    EXPECT_LT(std::abs(v), convBound);
    sq += v * v;
  }
  // U(-b, b) has variance b^2 / 3; 432 samples give about 7% error.
  EXPECT_NEAR(std::sqrt(sq / c1.size()), convBound / std::sqrt(3.0),
              0.25 * convBound / std::sqrt(3.0));
}

TEST(Init, StateWithoutInitialiserIsRejectedByInitialValue) {
  Graph g("values");
  auto x = g.input("x", {3});
  auto w = g.parameter("w", {3}, Init::full(1.5));
  EXPECT_EQ(g.initialValue(w), (std::vector<float>{1.5f, 1.5f, 1.5f}));
  expectUserError(g, [&] { g.initialValue(x); }, __LINE__,
                  "needs a parameter or buffer");
}

TEST(Nn, SequentialChainsLayersAndCollectsParameters) {
  Graph g("seq");
  auto x = g.input("x", {16, 1, 28, 28});
  nn::Sequential net{nn::Conv2d(g, 1, 6, {5}, {.padding = {2, 2}}), nn::ReLU(),
                     nn::MaxPool2d({2}), nn::Flatten(),
                     nn::Linear(g, 6 * 14 * 14, 10)};
  EXPECT_EQ(net.size(), 5u);
  auto y = net(x);
  EXPECT_EQ(y.shape(), (Shape{16, 10}));
  auto params = net.parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].shape(), (Shape{6, 1, 5, 5}));
  EXPECT_EQ(params[1].shape(), (Shape{6}));
  EXPECT_EQ(params[2].shape(), (Shape{10, 6 * 14 * 14}));
  // Unnamed layers are numbered per graph.
  std::string text = g.str();
  EXPECT_NE(text.find("\"conv0.weight\""), std::string::npos);
  EXPECT_NE(text.find("\"linear0.bias\""), std::string::npos);
  nn::Linear noBias(g, 10, 3, {.bias = false});
  EXPECT_FALSE(noBias.bias());
  EXPECT_EQ(noBias.parameters().size(), 1u);
  EXPECT_NE(g.str().find("\"linear1.weight\""), std::string::npos);
}

TEST(Nn, SequentialBuildsUnnamedLayersInTheOrderWritten) {
  Graph g("order");
  nn::Sequential net{nn::Linear(g, 4, 5), nn::Linear(g, 5, 3)};
  auto params = net.parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].shape(), (Shape{5, 4}));
  std::string text = g.str();
  EXPECT_NE(text.find("\"linear0.weight\" parameter : tensor<5x4xf32>"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\"linear1.weight\" parameter : tensor<3x5xf32>"),
            std::string::npos) << text;
}

TEST(Init, SeedsFollowNamesNotConstructionOrder) {
  Graph a("a"), b("b");
  nn::Linear a1(a, 3, 3, {.name = "first"}), a2(a, 3, 3, {.name = "second"});
  nn::Linear b2(b, 3, 3, {.name = "second"}), b1(b, 3, 3, {.name = "first"});
  EXPECT_EQ(a.initialValue(a1.weight()), b.initialValue(b1.weight()));
  EXPECT_EQ(a.initialValue(a2.bias()), b.initialValue(b2.bias()));
  EXPECT_NE(a.initialValue(a1.weight()), a.initialValue(a2.weight()));
  EXPECT_NE(a.seedFor("first.weight"), a.seedFor("first.bias"));
  b.manual_seed(1);
  EXPECT_NE(a.seedFor("first.weight"), b.seedFor("first.weight"));
}

TEST(Nn, LayerErrorsNameTheUsersLine) {
  Graph g("bad");
  expectUserError(g, [&] { nn::Linear(g, 0, 2); }, __LINE__,
                  "feature counts must be positive");
  auto x = g.input("x", {8, 3});
  nn::Linear fc(g, 4, 2);
  expectUserError(g, [&] { fc(x); }, __LINE__,
                  "input [8, 3] has 3 features but weight [2, 4] expects 4");
}

TEST(RecordedDevices, OneIndexRangeEverywhere) {
  // cuda:N parses the same way in the frontend, the dialect, the placement
  // options and the runtime: N from 0 to 65535.
  EXPECT_EQ(Device::parse("cuda:65535").index(), 65535);
  EXPECT_EQ(cuda(65535).index(), 65535);
  EXPECT_THROW(Device::parse("cuda:65536"), Error);
  EXPECT_THROW(Device::parse("cuda:99999999999"), Error);
  EXPECT_THROW(cuda(65536), Error);
}

TEST(Nn, ActivationsRecordTheirOps) {
  Graph g("act");
  auto x = g.input("x", {4, 8});
  nn::Sequential net{nn::GELU(), nn::GELU("tanh"), nn::SiLU()};
  auto y = erf(sin(cos(abs(rsqrt(reciprocal(net(x)))))));
  g.output("y", y);
  std::string ir = g.str();
  for (const char *op : {"locus.gelu", "locus.silu", "locus.erf", "locus.sin",
                         "locus.cos", "locus.abs", "locus.rsqrt",
                         "locus.reciprocal"})
    EXPECT_NE(ir.find(op), std::string::npos) << op;
  EXPECT_EQ(countOps(g, "locus.gelu"), 2u);
  std::regex tanhForm(R"(locus\.gelu %\S+ \{tanh\})");
  EXPECT_EQ(std::distance(std::sregex_iterator(ir.begin(), ir.end(), tanhForm),
                          std::sregex_iterator()), 1);
  expectUserError(g, [&] { gelu(x, "fast"); }, __LINE__,
                  "gelu: approximate is 'none' or 'tanh', not 'fast'");
}

TEST(RecordedRandom, OneRunCounterPerGraphAndErrorsAtTheUsersLine) {
  Graph g("rng");
  auto x = g.input("x", {4, 8});
  auto labels = g.input("l", {4}, {.dtype = DType::i64});
  // A failing call records nothing, not even the run counter.
  expectUserError(g, [&] { dropout(x, 1.5); }, __LINE__,
                  "dropout probability has to be between 0 and 1, but got 1.5");
  expectUserError(g, [&] { dropout(x, -0.25); }, __LINE__,
                  "dropout probability has to be between 0 and 1");
  expectUserError(g, [&] { rand(g, {2, -1}); }, __LINE__,
                  "shape [2, -1] has a negative dimension");
  expectUserError(g, [&] { dropout(labels, 0.5); }, __LINE__,
                  "dropout needs an f32 tensor, got i64");
  expectUserError(g, [&] { bernoulli(labels); }, __LINE__,
                  "bernoulli needs an f32 tensor, got i64");
  EXPECT_EQ(countOps(g, "locus.state"), 0u);
  // p = 0, and evaluation: x itself, nothing recorded. p = 1: x * 0, no draw.
  size_t before = g.numOps();
  EXPECT_EQ(dropout(x, 0.0).opaqueValue(), x.opaqueValue());
  EXPECT_EQ(dropout(x, 0.5, false).opaqueValue(), x.opaqueValue());
  EXPECT_EQ(g.numOps(), before);
  (void)dropout(x, 1.0);
  EXPECT_EQ(countOps(g, "locus.random"), 0u);
  EXPECT_EQ(countOps(g, "locus.state"), 0u);
  // Four draws share one counter and its one update; each has its seed.
  auto a = dropout(x, 0.5);
  (void)rand(g, {3});
  (void)randn(g, {2, 2}, cuda(0));
  (void)bernoulli(a);
  EXPECT_EQ(countOps(g, "locus.random"), 4u);
  EXPECT_EQ(countOps(g, "locus.state"), 1u);
  EXPECT_EQ(countOps(g, "locus.assign"), 1u);
  std::string ir = g.str();
  EXPECT_NE(ir.find("locus.state \"rng.step\" buffer : tensor<f32>"), std::string::npos) << ir;
  for (int call = 0; call < 4; ++call) {
    auto seed = static_cast<int64_t>(g.seedFor("rng" + std::to_string(call)));
    EXPECT_NE(ir.find(" seed " + std::to_string(seed) + " step "), std::string::npos) << call;
  }
  EXPECT_NE(ir.find("locus.random normal [2, 2]"), std::string::npos) << ir;
  EXPECT_EQ(countOps(g, "locus.to"), 1u); // randn on cuda:0 reads the moved counter
  // The counter's name is not the user's to take.
  expectUserError(g, [&] { g.buffer("rng.step", {}, Init::zeros()); }, __LINE__,
                  "buffer name 'rng.step' is already used");
}

TEST(RecordedRandom, AFailedLayerCallTakesItsNewCounterWithIt) {
  Graph g("rollback");
  auto x = g.input("x", {4, 8});
  nn::Sequential net{nn::Dropout(0.5), nn::Linear(g, 3, 2)};
  expectUserError(g, [&] { net(x); }, __LINE__, "has 8 features");
  EXPECT_EQ(countOps(g, "locus.state"), 2u); // the Linear's parameters
  // The next draw makes the counter again.
  g.output("u", rand(g, {5}));
  EXPECT_EQ(countOps(g, "locus.state"), 3u);
  EXPECT_EQ(countOps(g, "locus.assign"), 1u);
  EXPECT_NE(g.str().find("\"rng.step\""), std::string::npos);
}

TEST(Nn, DropoutFollowsTrainAndEval) {
  Graph g("drop");
  auto x = g.input("x", {4, 8});
  nn::Dropout drop(0.25);
  EXPECT_EQ(drop.p(), 0.25);
  EXPECT_TRUE(drop.is_training());
  (void)drop(x);
  EXPECT_EQ(countOps(g, "locus.random"), 1u);
  drop.eval();
  EXPECT_FALSE(drop.is_training());
  size_t before = g.numOps();
  EXPECT_EQ(drop(x).opaqueValue(), x.opaqueValue());
  EXPECT_EQ(g.numOps(), before);
  drop.train();
  EXPECT_TRUE(drop.is_training());
  (void)drop(x);
  EXPECT_EQ(countOps(g, "locus.random"), 2u);
  expectUserError(g, [&] { nn::Dropout(2.0); }, __LINE__,
                  "dropout probability has to be between 0 and 1, but got 2");
}

} // namespace
// clang-format on
