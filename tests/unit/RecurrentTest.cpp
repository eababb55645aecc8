// torch.nn.LSTM and torch.nn.GRU (two layers, bidirectional) against
// PyTorch 1.13 in float64: outputs, final states and a gradient, from
// weights and inputs both sides compute the same way (each parameter,
// in PyTorch's state_dict order k, holds float(0.3 * sin(0.7 * i + k)); x
// holds float(cos(0.5 * i))). The expected numbers were printed by torch
// with %.17g. Also the layer's mistakes, at the user's line.

#include "ErrorOf.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace locus;
using locus::test::errorOf;

namespace {

constexpr int64_t kT = 4, kN = 2, kI = 3, kH = 2;

std::vector<float> det(size_t n, size_t k) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(0.3 * std::sin(0.7 * double(i) + double(k)));
  return v;
}

struct Expected {
  std::vector<std::string> names; // PyTorch's state_dict order
  std::vector<double> y, h, c, grad;
  const char *gradOf;
};

const Expected kLstm{
    {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
     "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
     "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
     "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse",
     "bias_ih_l1_reverse", "bias_hh_l1_reverse"},
    {0.060844426539120443, 0.10846009462393666,  -0.22376094023487714,
     -0.25220604441575889, 0.07364484694740131,  0.10079995734641986,
     -0.22644096780050399, -0.24870934949150506, 0.096187707978500334,
     0.15342770081767626,  -0.21103417136700817, -0.23453291524151826,
     0.098780249518516702, 0.14931563980148066,  -0.21089357796668159,
     -0.23400574041200264, 0.10316948699836045,  0.17759957686321362,
     -0.18279799862287471, -0.20218877923968409, 0.11101868112699582,
     0.17229312142206016,  -0.18421986611372623, -0.20018437312509368,
     0.11446960830892891,  0.18742035746461816,  -0.13231490633611054,
     -0.12981725943714592, 0.11581296625743344,  0.18188831020651144,
     -0.12612757284231974, -0.13365999350427621},
    {-0.17560621003590096, 0.045890237991038862, -0.26595928210849862,
     -0.076387266106769838, 0.009461643833590409, -0.041578855081345185,
     -0.0069707807636350816, -0.11882950735032045, 0.11446960830892891,
     0.18742035746461816, 0.11581296625743344, 0.18188831020651144,
     -0.22376094023487714, -0.25220604441575889, -0.22644096780050399,
     -0.24870934949150506},
    {-0.41276351315429383, 0.078398062396487209, -0.48488713023135754,
     -0.13001855187008363, 0.039966702300497481, -0.095807748080515967,
     -0.015921520573767708, -0.39711115789593932, 0.1978210119506173,
     0.3545430375683567, 0.19803481924165001, 0.34988214101717652,
     -0.48897307974076143, -0.46505200799966107, -0.51341617617751378,
     -0.44925587830878233},
    {-0.031658727669907467,  -0.019723245665059855,   -0.0029588245017283538,
     -0.0040190680898331962, -0.002138501085977523,   0.00026564571446381771,
     -0.0085720309845166726, -0.0035120492634468418,  0.0024078044116433834,
     0.0016826127054973042,  0.0021330920028696113,   0.0020613157141923374,
     0.027623244890901556,   -1.7396056216492908e-05, -0.027653775814497475,
     -0.0038970563087127983, -0.0065034156511123162,  -0.0075175102879319004,
     -0.056730695952576203,  -0.032996144812706872,   -0.0011829846896780482,
     -0.0012442843080809278, 0.00082709278341821168,  0.0026959686454199449},
    "weight_ih_l0"};

const Expected kGru{
    {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
     "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
     "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
     "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse",
     "bias_ih_l1_reverse", "bias_hh_l1_reverse"},
    {0.061158856373309756, 0.17453253248660799,  -0.31287348712259327,
     -0.46536663436421055, 0.089541342004917687, 0.17364546215664248,
     -0.33485466175398004, -0.44764704252507076, 0.12576798699236322,
     0.24420607464625513,  -0.31540254454764949, -0.40980442230821473,
     0.11082436679340685,  0.25117793721643855,  -0.26817725082520455,
     -0.45467458718441378, 0.12842833550883687,  0.28349531894478708,
     -0.24804772542059345, -0.37352087120325755, 0.10838029007707776,
     0.2975330426934103,   -0.21884114871649321, -0.40478568647225721,
     0.15392950547562703,  0.30024924121018776,  -0.19336584946186802,
     -0.22452857803814494, 0.10574252376396095,  0.31722783326249671,
     -0.13473158554044806, -0.28623062415392642},
    {-0.31953873425886925, 0.22622501788975799, -0.42904120422481895,
     -0.19024987703687868, 0.066795215852311352, 0.061524294786202388,
     0.039634289610733175, -0.1747270874681493, 0.15392950547562703,
     0.30024924121018776, 0.10574252376396095, 0.31722783326249671,
     -0.31287348712259327, -0.46536663436421055, -0.33485466175398004,
     -0.44764704252507076},
    {},
    {-0.052945821108434168, -0.082869212735085407, -0.076099830722750048,
     -0.11882043133711243, 0.043336112700755151, 0.071977111923234915,
     0.056485011407974101, 0.085090044228107453, 0.44776010673270067,
     0.69813820950631889, 0.56990602338560969, 0.89292138571508517},
    "weight_hh_l1_reverse"};

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-6 + 2e-5 * std::fabs(want[i]))
        << what << " element " << i;
}

/// Builds the layer, loss = sum(y^2) + sum(h^2) and its gradient wrt
/// `e.gradOf`, loads the weights and checks every number on `device`.
template <typename Layer> void check(const Expected &e, const char *device) {
  Graph g("rnn");
  Tensor x = g.input("x", {kT, kN, kI});
  Layer rnn(g, kI, kH, {.numLayers = 2, .bidirectional = true, .name = "rnn"});
  nn::RecurrentOutput out = rnn(x, Tensor());
  Tensor loss =
      sum(out.output * out.output, {0, 1, 2}) + sum(out.h * out.h, {0, 1, 2});
  Tensor param;
  for (const Tensor &p : rnn.parameters())
    if (stateName(p) == std::string("rnn.") + e.gradOf)
      param = p;
  ASSERT_TRUE(param);
  g.output("y", out.output);
  g.output("h", out.h);
  if (out.c)
    g.output("c", out.c);
  g.output("grad", grad(loss, {param})[0]);
  // "sim": prefer-gpu on cpu + cuda:0, which runs the CUDA kernels' host
  // versions on the sim device where no GPU is.
  CompileOptions options;
  bool sim = std::string(device) == "sim";
  options.devices = sim ? std::vector<std::string>{"cpu", "cuda:0"}
                        : std::vector<std::string>{"cpu"};
  options.policy = sim ? "prefer-gpu" : "cpu";
  CompiledModel m = compile(g, options);
  ASSERT_EQ(rnn.parameters().size(), e.names.size());
  for (size_t k = 0; k < e.names.size(); ++k) {
    std::string name = "rnn." + e.names[k];
    m.setState(name, HostTensor::fromF32(m.state(name).shape,
                                         det(m.state(name).f32.size(), k)));
  }
  std::vector<float> xs(kT * kN * kI);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<float>(std::cos(0.5 * double(i)));
  auto got = m.run({{"x", HostTensor::fromF32({kT, kN, kI}, xs)}});
  expectNear(got.at("y").f32, e.y, std::string(device) + " y");
  expectNear(got.at("h").f32, e.h, std::string(device) + " h");
  if (!e.c.empty())
    expectNear(got.at("c").f32, e.c, std::string(device) + " c");
  expectNear(got.at("grad").f32, e.grad, std::string(device) + " grad");
}

} // namespace

TEST(Recurrent, LstmMatchesPyTorch) {
  check<nn::LSTM>(kLstm, "cpu");
  check<nn::LSTM>(kLstm, "sim");
}

TEST(Recurrent, GruMatchesPyTorch) {
  check<nn::GRU>(kGru, "cpu");
  check<nn::GRU>(kGru, "sim");
}

TEST(Recurrent, BatchFirstIsTheTransposedLayout) {
  Graph g("bf");
  Tensor x = g.input("x", {kN, kT, kI});
  nn::GRU gru(g, kI, kH, {.batchFirst = true});
  nn::RecurrentOutput out = gru(x, Tensor());
  EXPECT_EQ(out.output.shape(), (Shape{kN, kT, kH}));
  EXPECT_EQ(out.h.shape(), (Shape{1, kN, kH}));
  EXPECT_FALSE(out.c);
  EXPECT_EQ(gru(x).shape(), (Shape{kN, kT, kH}));
}

TEST(Recurrent, MistakesAreErrorsAtTheUsersLine) {
  Graph g("bad");
  Tensor x = g.input("x", {kT, kN, kI});
  unsigned line = 0, here = __LINE__ + 2;
  std::string e =
      errorOf([&] { nn::LSTM(g, kI, kH, {.numLayers = 0}); }, &line);
  EXPECT_EQ(e, "LSTM: num_layers must be positive, got 0");
  EXPECT_EQ(line, here);
  nn::LSTM lstm(g, kI, kH, {.numLayers = 2});
  e = errorOf([&] { lstm(g.input("y", {kT, kN, 5})); }, &line);
  EXPECT_EQ(e, "LSTM takes x [T, N, 3] ([N, T, 3] with batch_first), got "
               "[4, 2, 5]");
  e = errorOf([&] { lstm(x, g.zeros({1, kN, kH})); }, &line);
  EXPECT_EQ(e, "LSTM takes h0 [2, 2, 2], got [1, 2, 2]");
  nn::GRU gru(g, kI, kH);
  e = errorOf([&] { gru(x, Tensor(), g.zeros({1, kN, kH})); }, &line);
  EXPECT_EQ(e, "GRU has no cell state; pass h0 alone");
}
