// DynamicDimsTest.cpp - dynamic sizes: their arithmetic, reshapes, and the
// frontend recording and checking graphs that use them.

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/LocusDialect.h"
#include "locus/Frontend/Recorded.h"
#include "locus/locus.h"

#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <string>

using namespace locus;

// The error tests compare an Error's line with __LINE__ on the same line.
// clang-format off
namespace {

const DimSymbol kBatch{"batch", 64}, kSeq{"seq", 16};

DimExpr sym(unsigned k) { return DimExpr::symbol(k); }
DimExpr num(int64_t n) { return DimExpr::constant(n); }

/// The dims of every output, as "name: [dims]" lines, after the whole
/// graph verifies.
std::string outputDims(const Graph &g) {
  detail::RecordedGraph r = detail::recorded(g);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(r.module)));
  auto graph = *r.module.getOps<GraphOp>().begin();
  mlir::FailureOr<DynamicDims> dims = DynamicDims::analyze(graph);
  EXPECT_TRUE(mlir::succeeded(dims));
  std::string text;
  for (auto output : graph.getBodyBlock().getOps<OutputOp>())
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): expected above.
    text += output.getName().str() + ": " + dims->format(output.getValue()) +
            "\n";
  return text;
}

/// The message of the Error `fn` throws, checked to be at `line`.
template <typename F>
std::string errorAt(F &&fn, int line) {
  try {
    fn();
  } catch (const Error &e) {
    EXPECT_EQ(e.line(), static_cast<unsigned>(line)) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected a locus::Error";
  return "";
}

TEST(DimExpr, ArithmeticAndText) {
  std::vector<DimSymbol> symbols{kBatch, kSeq};
  DimExpr bs = sym(0) * sym(1) * num(4);
  EXPECT_EQ(formatDim(bs, symbols), "4*batch*seq");
  EXPECT_EQ(formatDim(sym(0) * sym(0), symbols), "batch^2");
  EXPECT_EQ(formatDim(num(7), symbols), "7");
  EXPECT_EQ(bs.evaluate({64, 16}), 4 * 64 * 16);
  EXPECT_EQ(bs.dividedBy(sym(1)), sym(0) * num(4));
  EXPECT_FALSE(bs.dividedBy(num(3)).has_value());
  EXPECT_FALSE(sym(0).dividedBy(sym(1)).has_value());
  EXPECT_EQ(elementCount({sym(0), num(10)}), sym(0) * num(10));
  EXPECT_EQ(broadcastDims({sym(0), num(1)}, {num(5)}),
            (DimExprs{sym(0), num(5)}));
  EXPECT_FALSE(broadcastDims({sym(0)}, {sym(1)}).has_value());
  DimExpr cube{1 << 30, {3}};
  EXPECT_FALSE(cube.evaluate({1 << 30}).has_value());
}

TEST(DimExpr, ProbesReadStaticMultiplesOfAProbeBack) {
  // 20014 = 2 * 10007, the first probe of the first size: a static
  // dimension that size multiplies must still read back as 20014*batch.
  Graph g("probe");
  auto x = g.input("x", {dyn("batch", 4), 1});
  auto w = g.parameter("w", {20014, 1}, Init::zeros());
  Tensor y = linear(x, w);
  g.output("y", y);
  g.output("flat", reshape(y, {-1}));
  EXPECT_EQ(outputDims(g), "y: [batch, 20014]\nflat: [20014*batch]\n");
}

TEST(DimExpr, ReshapesFindWhereTheSizesGo) {
  std::vector<int64_t> bounds{64, 16};
  std::string why;
  auto reshape = [&](const DimExprs &in, const std::vector<int64_t> &inShape,
                     const std::vector<int64_t> &out) {
    mlir::FailureOr<DimExprs> dims = reshapeDims(in, inShape, out, bounds, why);
    EXPECT_TRUE(mlir::succeeded(dims)) << why;
    return dims.value_or(DimExprs());
  };
  // Heads split and merged: [batch, seq, 96] <-> [batch, seq, 6, 16].
  EXPECT_EQ(reshape({sym(0), sym(1), num(96)}, {64, 16, 96}, {64, 16, 6, 16}),
            (DimExprs{sym(0), sym(1), num(6), num(16)}));
  // Rows of all the tokens, and back.
  EXPECT_EQ(reshape({sym(0), sym(1), num(96)}, {64, 16, 96}, {1024, 96}),
            (DimExprs{sym(0) * sym(1), num(96)}));
  EXPECT_EQ(reshape({sym(0) * sym(1), num(96)}, {1024, 96}, {64, 16, 96}),
            (DimExprs{sym(0), sym(1), num(96)}));
  // Flattening with a size-1 dimension in the way.
  EXPECT_EQ(reshape({sym(0), num(1), num(4), num(4)}, {64, 1, 4, 4}, {64, 16}),
            (DimExprs{sym(0), num(16)}));
  // Nothing fits, or two ways do (batch and seq both 16).
  EXPECT_TRUE(mlir::failed(reshapeDims({sym(0)}, {64}, {2, 32}, bounds, why)));
  EXPECT_EQ(why, "no output dimensions take the dynamic sizes");
  EXPECT_TRUE(mlir::failed(reshapeDims({sym(0) * sym(1)}, {256}, {16, 16},
                                       {16, 16}, why)));
  EXPECT_NE(why.find("more than one way"), std::string::npos);
}

TEST(DynamicInputs, AnMlpStepRecordsItsDims) {
  Graph g("mlp");
  auto x = g.input("x", {dyn("batch", 64), 20});
  auto t = g.input("t", {dyn("batch", 64)}, {.dtype = DType::i64});
  nn::Linear fc1(g, 20, 32), fc2(g, 32, 10);
  Tensor logits = fc2(relu(fc1(x)));
  g.output("logits", logits);
  g.output("loss", cross_entropy(logits, t));
  g.output("flat", flatten(reshape(logits, {-1, 5, 2})));
  g.output("scaled", logits * 2.0f + logits);
  EXPECT_EQ(outputDims(g), "logits: [batch, 10]\nloss: []\n"
                           "flat: [batch, 10]\nscaled: [batch, 10]\n");
  EXPECT_EQ(logits.shape(), (Shape{64, 10})); // sized at the bound
}

TEST(DynamicInputs, AttentionShapedOpsKeepBatchAndSeq) {
  Graph g("attn");
  auto x = g.input("x", {dyn("batch", 8), dyn("seq", 32), 24});
  Tensor heads = transpose(reshape(x, {8, 32, 4, 6}), 1, 2); // [b, h, s, d]
  Tensor scores = softmax(matmul(heads, transpose(heads, 2, 3)), -1);
  Tensor mixed = matmul(scores, heads);
  g.output("out", reshape(transpose(mixed, 1, 2), {8, 32, 24}));
  g.output("pooled", mean(x, {1}));
  EXPECT_EQ(outputDims(g),
            "out: [batch, seq, 24]\npooled: [batch, 24]\n");
}

TEST(DynamicInputs, MismatchedSizesAreErrorsAtTheUsersLine) {
  Graph g("errors");
  auto a = g.input("a", {dyn("batch", 8), 4});
  auto b = g.input("b", {dyn("seq", 8), 4});
  auto w = g.parameter("w", {8, 4}, Init::zeros());
  std::string msg = errorAt([&] { (void)(a + b); }, __LINE__);
  EXPECT_NE(msg.find("operands [batch, 4], [seq, 4] agree at the bounds but "
                     "not for every size"), std::string::npos) << msg;
  msg = errorAt([&] { (void)(a * w); }, __LINE__);
  EXPECT_NE(msg.find("[batch, 4], [8, 4]"), std::string::npos) << msg;
  msg = errorAt([&] { g.input("c", {dyn("batch", 9)}); }, __LINE__);
  EXPECT_EQ(msg, "dynamic size 'batch' has bound 8 already; here it has 9");
  msg = errorAt([&] { g.input("d", {dyn("n", 0)}); }, __LINE__);
  EXPECT_NE(msg.find("needs a bound of at least 1"), std::string::npos);
  msg = errorAt([&] { g.input("locus.sizes", {4}); }, __LINE__);
  EXPECT_EQ(msg, "input name 'locus.sizes' is Locus's own (the run's dynamic sizes)");
  msg = errorAt([&] { g.input("e", {dyn("", 4)}); }, __LINE__);
  EXPECT_EQ(msg, "input 'e': a dynamic size needs a name, as in "
                 "dyn(\"batch\", 4)");
  msg = errorAt([&] { reshape(a, {4, 4, 2}); }, __LINE__);
  EXPECT_NE(msg.find("cannot reshape [batch, 4] into [4, 4, 2] for every size"),
            std::string::npos) << msg;
  // After the errors the graph goes on, its dims intact.
  g.output("sum", a + a);
  EXPECT_EQ(outputDims(g), "sum: [batch, 4]\n");
}

TEST(DynamicInputs, StaticGraphsAndBracedShapesAreUnchanged) {
  Graph g("static");
  auto s = g.input("s", {});
  auto x = g.input("x", {4, 3});
  g.output("y", x * s);
  detail::RecordedGraph r = detail::recorded(g);
  auto graph = *r.module.getOps<GraphOp>().begin();
  EXPECT_FALSE(graph->hasAttr(kSymbolsAttrName));
  EXPECT_EQ(g.str().find("locus.dims"), std::string::npos);
}

} // namespace
// clang-format on
