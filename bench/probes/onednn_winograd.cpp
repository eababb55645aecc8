// onednn_winograd.cpp - when does oneDNN's Winograd convolution (F(4x4,
// 3x3)) beat its direct one on this CPU? For 3x3 convolutions of stride 1
// (the shapes of the ResNet blocks and of the ResNet-18 example's
// training step), the forward, the input gradient and the weight gradient
// as the runtime runs them: operands in the user's NCHW and OIHW layouts,
// reordered into oneDNN's each call (a training step changes its weights,
// so their transform is paid every step), the two algorithms in
// interleaved rounds; and each algorithm's forward against a double
// reference on random inputs (the largest error over sum |x w|). Behind
// the choice in runtime/src/conv.cpp (winogradPays). Not part of the
// build:
//
//   g++ -O2 bench/probes/onednn_winograd.cpp -ldnnl -o /tmp/onednn_winograd
//   OMP_NUM_THREADS=2 /tmp/onednn_winograd
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {

struct Shape {
  int n, c, o, h; // images, channels in and out, height = width
};

/// One pass (0 forward, 1 input gradient, 2 weight gradient) of `s` with
/// `alg`, operands in user layouts: a closure that runs it with its
/// reorders, or an empty one when oneDNN has no implementation.
std::function<void()> pass(engine &eng, stream &st, const Shape &s,
                           algorithm alg, int kind, std::vector<float> &x,
                           std::vector<float> &w, std::vector<float> &y) {
  memory::dims sd{s.n, s.c, s.h, s.h}, wd{s.o, s.c, 3, 3},
      dd{s.n, s.o, s.h, s.h}, one{1, 1};
  memory::desc src(sd, dt::f32, tag::any), wei(wd, dt::f32, tag::any),
      dst(dd, dt::f32, tag::any);
  auto user = [&](memory::dims d, tag t, std::vector<float> &v) {
    return memory({d, dt::f32, t}, eng, v.data());
  };
  memory ux = user(sd, tag::nchw, x), uw = user(wd, tag::oihw, w),
         uy = user(dd, tag::nchw, y);
  try {
    convolution_forward::primitive_desc fpd(
        {prop_kind::forward_training, alg, src, wei, dst, one, one, one}, eng);
    // The operands each pass reads and writes: (user memory, oneDNN's desc,
    // argument).
    struct Arg {
      memory user;
      memory::desc lib;
      int arg;
      bool out;
    };
    std::vector<Arg> args;
    primitive prim;
    if (kind == 0) {
      prim = convolution_forward(fpd);
      args = {{ux, fpd.src_desc(), DNNL_ARG_SRC, false},
              {uw, fpd.weights_desc(), DNNL_ARG_WEIGHTS, false},
              {uy, fpd.dst_desc(), DNNL_ARG_DST, true}};
    } else if (kind == 1) {
      convolution_backward_data::primitive_desc pd(
          {alg, src, wei, dst, one, one, one}, eng, fpd);
      prim = convolution_backward_data(pd);
      args = {{uy, pd.diff_dst_desc(), DNNL_ARG_DIFF_DST, false},
              {uw, pd.weights_desc(), DNNL_ARG_WEIGHTS, false},
              {ux, pd.diff_src_desc(), DNNL_ARG_DIFF_SRC, true}};
    } else {
      convolution_backward_weights::primitive_desc pd(
          {alg, src, wei, dst, one, one, one}, eng, fpd);
      prim = convolution_backward_weights(pd);
      args = {{ux, pd.src_desc(), DNNL_ARG_SRC, false},
              {uy, pd.diff_dst_desc(), DNNL_ARG_DIFF_DST, false},
              {uw, pd.diff_weights_desc(), DNNL_ARG_DIFF_WEIGHTS, true}};
    }
    std::vector<memory> lib;
    for (Arg &a : args)
      lib.emplace_back(a.lib, eng);
    return [=, &st]() mutable {
      std::unordered_map<int, memory> exec;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].out)
          reorder(args[i].user, lib[i]).execute(st, args[i].user, lib[i]);
        exec[args[i].arg] = lib[i];
      }
      prim.execute(st, exec);
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].out)
          reorder(lib[i], args[i].user).execute(st, lib[i], args[i].user);
      st.wait();
    };
  } catch (dnnl::error &) {
    return {};
  }
}

double medianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The largest |forward - reference| over the largest sum |x w|.
double forwardError(const Shape &s, const std::vector<float> &x,
                    const std::vector<float> &w, const std::vector<float> &y) {
  double worst = 0, scale = 0;
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < s.o; ++o)
      for (int i = 0; i < s.h; ++i)
        for (int j = 0; j < s.h; ++j) {
          double sum = 0, abs = 0;
          for (int c = 0; c < s.c; ++c)
            for (int p = 0; p < 3; ++p)
              for (int q = 0; q < 3; ++q) {
                int r = i + p - 1, col = j + q - 1;
                if (r < 0 || r >= s.h || col < 0 || col >= s.h)
                  continue;
                double v =
                    double(x[((size_t(n) * s.c + c) * s.h + r) * s.h + col]) *
                    w[((size_t(o) * s.c + c) * 3 + p) * 3 + q];
                sum += v;
                abs += std::fabs(v);
              }
          size_t at = ((size_t(n) * s.o + o) * s.h + i) * s.h + j;
          worst = std::max(worst, std::fabs(y[at] - sum));
          scale = std::max(scale, abs);
        }
  return worst / scale;
}

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const Shape shapes[] = {
      {1, 64, 64, 56},   {8, 64, 64, 56},    {8, 64, 64, 32},
      {8, 128, 128, 16}, {8, 256, 256, 8},   {8, 512, 512, 4},
      {32, 64, 64, 32},  {32, 128, 128, 16}, {32, 256, 256, 8},
      {32, 512, 512, 4}, {16, 32, 32, 28},   {64, 16, 32, 14}};
  const char *passes[] = {"forward", "input grad", "weight grad"};
  std::printf("oneDNN %d.%d.%d; medians of 7 interleaved rounds, ms\n",
              dnnl_version()->major, dnnl_version()->minor,
              dnnl_version()->patch);
  std::printf("%-18s %-12s %9s %9s %6s\n", "n c->o hxw", "pass", "direct",
              "winograd", "ratio");
  for (const Shape &s : shapes) {
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(size_t(s.n) * s.c * s.h * s.h),
        w(size_t(s.o) * s.c * 9), y(size_t(s.n) * s.o * s.h * s.h);
    for (float &v : x)
      v = u(g);
    for (float &v : w)
      v = u(g);
    for (float &v : y)
      v = u(g);
    for (int kind = 0; kind < 3; ++kind) {
      auto direct =
          pass(eng, st, s, algorithm::convolution_direct, kind, x, w, y);
      auto wino =
          pass(eng, st, s, algorithm::convolution_winograd, kind, x, w, y);
      if (!direct || !wino)
        continue;
      std::vector<double> td, tw;
      for (int r = 0; r < 9; ++r)
        for (int a = 0; a < 2; ++a) {
          auto t0 = std::chrono::steady_clock::now();
          (a ? wino : direct)();
          double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
          if (r >= 2)
            (a ? tw : td).push_back(ms);
        }
      std::printf("%3d %3d->%-3d %2dx%-3d %-12s %9.3f %9.3f %6.2f\n", s.n, s.c,
                  s.o, s.h, s.h, passes[kind], medianMs(td), medianMs(tw),
                  medianMs(tw) / medianMs(td));
      if (kind == 0 && s.n * s.o * s.h * s.h <= 2'000'000) {
        direct();
        double ed = forwardError(s, x, w, y);
        wino();
        double ew = forwardError(s, x, w, y);
        std::printf("%-31s error/sum|xw|: direct %.1e, winograd %.1e\n", "", ed,
                    ew);
      }
    }
  }
}
