// onednn_bf16.cpp - does bf16 pay on this CPU? oneDNN's 3x3 convolutions
// of a ResNet at batch 8 (64 channels at 56x56 down to 512 at 7x7, bias
// and ReLU fused) in f32 (direct and Winograd) and with bf16 operands and
// results (NHWC), and a 1024^3 matrix product in f32, in f32 with
// fpmath_mode bf16 (implicit down-conversion) and with bf16 operands (f32
// results), in interleaved rounds; prints each primitive's implementation
// and the median time against f32's direct one. Issue 40's CPU question,
// asked of the oneDNN Locus loads. Not part of the build:
//
//   g++ -O2 bench/probes/onednn_bf16.cpp -ldnnl -o /tmp/onednn_bf16
//   OMP_NUM_THREADS=2 /tmp/onednn_bf16
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace dnnl;
using dt = memory::data_type;

namespace {

/// Fills `m` with values in [1, 1.6) (bf16 or f32), never zeros.
void fill(memory &m, dt type) {
  size_t bytes = m.get_desc().get_size();
  auto *p = static_cast<unsigned char *>(m.get_data_handle());
  for (size_t i = 0; i < bytes / (type == dt::bf16 ? 2 : 4); ++i) {
    float v = 1.0f + static_cast<float>(i % 61) * 0.01f;
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if (type == dt::bf16) {
      uint16_t h = static_cast<uint16_t>(u >> 16);
      std::memcpy(p + 2 * i, &h, 2);
    } else {
      std::memcpy(p + 4 * i, &u, 4);
    }
  }
}

struct Case {
  std::string name, impl;
  std::function<void()> run;
  std::vector<double> ms;
};

Case conv(engine &eng, stream &s, std::string name, dt in, dt out,
          memory::format_tag tag, algorithm alg, int C, int HW) {
  memory::desc src({8, C, HW, HW}, in, tag);
  memory::desc wei({C, C, 3, 3}, in, memory::format_tag::any);
  memory::desc bia({C}, dt::f32, memory::format_tag::a);
  memory::desc dst({8, C, HW, HW}, out, tag);
  primitive_attr attr;
  post_ops po;
  po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
  attr.set_post_ops(po);
  auto pd = convolution_forward::primitive_desc(
      convolution_forward::desc(prop_kind::forward_inference, alg, src, wei,
                                bia, dst, {1, 1}, {1, 1}, {1, 1}),
      attr, eng);
  auto ms = std::make_shared<memory>(pd.src_desc(), eng);
  auto mw = std::make_shared<memory>(pd.weights_desc(), eng);
  auto mb = std::make_shared<memory>(pd.bias_desc(), eng);
  auto md = std::make_shared<memory>(pd.dst_desc(), eng);
  fill(*ms, in);
  fill(*mw, in);
  fill(*mb, dt::f32);
  auto p = std::make_shared<convolution_forward>(pd);
  return {name, pd.impl_info_str(), [=, &s] {
            p->execute(s, {{DNNL_ARG_SRC, *ms},
                           {DNNL_ARG_WEIGHTS, *mw},
                           {DNNL_ARG_BIAS, *mb},
                           {DNNL_ARG_DST, *md}});
            s.wait();
          }};
}

Case product(engine &eng, stream &s, const char *name, dt in, bool fpmathBf16) {
  const memory::dim n = 1024;
  memory::desc a({n, n}, in, memory::format_tag::ab);
  memory::desc b({n, n}, in, memory::format_tag::ab);
  memory::desc c({n, n}, dt::f32, memory::format_tag::ab);
  primitive_attr attr;
  if (fpmathBf16)
    attr.set_fpmath_mode(fpmath_mode::bf16);
  auto pd =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, eng);
  auto ma = std::make_shared<memory>(a, eng);
  auto mb = std::make_shared<memory>(b, eng);
  auto mc = std::make_shared<memory>(c, eng);
  fill(*ma, in);
  fill(*mb, in);
  auto p = std::make_shared<dnnl::matmul>(pd);
  return {name, pd.impl_info_str(), [=, &s] {
            p->execute(s, {{DNNL_ARG_SRC, *ma},
                           {DNNL_ARG_WEIGHTS, *mb},
                           {DNNL_ARG_DST, *mc}});
            s.wait();
          }};
}

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::vector<Case> cases;
  using ft = memory::format_tag;
  const int shapes[4][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}};
  for (const auto &sh : shapes) {
    std::string p = std::to_string(sh[0]) + "ch " + std::to_string(sh[1]) +
                    "x" + std::to_string(sh[1]) + " ";
    cases.push_back(conv(eng, s, p + "f32 direct", dt::f32, dt::f32, ft::any,
                         algorithm::convolution_direct, sh[0], sh[1]));
    cases.push_back(conv(eng, s, p + "f32 winograd", dt::f32, dt::f32, ft::any,
                         algorithm::convolution_winograd, sh[0], sh[1]));
    cases.push_back(conv(eng, s, p + "bf16 nhwc", dt::bf16, dt::bf16, ft::nhwc,
                         algorithm::convolution_direct, sh[0], sh[1]));
  }
  cases.push_back(product(eng, s, "matmul f32", dt::f32, false));
  cases.push_back(product(eng, s, "matmul f32, fpmath bf16", dt::f32, true));
  cases.push_back(product(eng, s, "matmul bf16 operands", dt::bf16, false));
  for (Case &c : cases)
    for (int i = 0; i < 3; ++i)
      c.run(); // warm-up
  for (int round = 0; round < 15; ++round)
    for (Case &c : cases) {
      auto t0 = std::chrono::steady_clock::now();
      c.run();
      c.ms.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count());
    }
  std::printf("oneDNN %d.%d.%d; medians of 15 interleaved rounds\n",
              dnnl_version()->major, dnnl_version()->minor,
              dnnl_version()->patch);
  double base = 0;
  for (Case &c : cases) {
    std::sort(c.ms.begin(), c.ms.end());
    double med = c.ms[c.ms.size() / 2];
    if (c.name.find("f32 direct") != std::string::npos ||
        c.name == "matmul f32")
      base = med;
    std::printf("%-26s %-28s %8.3f ms  %.2fx f32\n", c.name.c_str(),
                c.impl.c_str(), med, med / base);
  }
}
