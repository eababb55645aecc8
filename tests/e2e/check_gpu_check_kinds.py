#!/usr/bin/env python3
"""tools/gpu-check sets a step's GPU time beside PyTorch's by kind of work
(tools/gpu_check/kinds.py). This checks that reading on real output: the
seed CNN's training step (tools/gpu_check/graphs.py, Adam) compiled for
cuda:0 and profiled on sim (LOCUS_PROFILE=1) sorts into the kinds it
holds, with every kernel counted once; and PyTorch's CUDA kernel names
sort as they should.

    check_gpu_check_kinds.py BUILD
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_check import graphs, kinds  # noqa: E402

TORCH_NAMES = {
    "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw": "convolution",
    "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>": "convolution",
    "void dgrad2d_c1_k1_nhwc_kernel<float>": "convolution",
    "ampere_sgemm_128x64_tn": "matrix product",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>": "matrix product",
    "void at::native::batch_norm_collect_statistics_kernel<float>": "norms and reductions",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>": "norms and reductions",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>": "softmax and losses",
    "void at::native::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>": "softmax and losses",
    "void at::native::max_pool_backward_nchw<float, float>": "pooling",
    "void at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<4>>": "optimizer",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>": "elementwise",
    "Memcpy HtoD (Pageable -> Device)": "copies",
}


def main():
    build = sys.argv[1]
    failures = []
    for name, want in TORCH_NAMES.items():
        if kinds.torch_kind(name) != want:
            failures.append("%s: %s, expected %s" % (name, kinds.torch_kind(name), want))
    with tempfile.TemporaryDirectory() as tmp:
        step = subprocess.run(
            [os.path.join(build, "tools", "locus-opt"), "-",
             "--locus-autodiff=optimizer=adam lr=0.001"],
            input=graphs.seed_cnn_loss(), capture_output=True, text=True, check=True).stdout
        with open(os.path.join(tmp, "cnn.mlir"), "w") as f:
            f.write(step)
        artifact = os.path.join(tmp, "cnn.locus")
        subprocess.run([os.path.join(build, "tools", "locus-compile"),
                        os.path.join(tmp, "cnn.mlir"), "-o", artifact,
                        "--devices=cpu,cuda:0", "--policy=strict", "--progress=never"],
                       check=True, capture_output=True)
        out = subprocess.run([os.path.join(build, "tools", "locus-run"), artifact,
                              "--random-inputs", "--runs", "3", "--quiet",
                              "--device-map", "cuda:0=sim"],
                             env=dict(os.environ, LOCUS_PROFILE="1"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, check=True).stdout
    rows = [line[len("locus profile: "):] for line in out.splitlines()
            if line.startswith("locus profile: ")]
    kernels = [r for r in rows if r.startswith("__locus_kernel_")]
    per_kind = kinds.locus_per_step(rows)
    for want in ("convolution", "matrix product", "pooling", "optimizer"):
        if want not in per_kind:
            failures.append("the seed CNN step has no %s kernel: %s" % (want, per_kind))
    counted = sum(n for n, _ in per_kind.values())
    if counted != len(kernels) or not kernels:
        failures.append("%d kernels counted of %d profiled" % (counted, len(kernels)))
    mean_ms = sum(float(r.split()[4]) for r in kernels) / 1000.0
    if abs(sum(ms for _, ms in per_kind.values()) - mean_ms) > 1e-6 * max(1.0, mean_ms):
        failures.append("the kinds' times do not add up to the kernels'")
    lines = kinds.side_by_side(per_kind, kinds.torch_per_step(
        {"steps": 2, "kernels": [[n, 2, 10.0] for n in TORCH_NAMES]}))
    if not any(line.startswith("total") for line in lines):
        failures.append("no total line: %s" % lines)
    print("\n".join(lines))
    for f in failures:
        print("FAIL:", f)
    print("gpu-check kinds: %d kernels in %d kinds; %s" % (
        len(kernels), len(per_kind), "failed" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
