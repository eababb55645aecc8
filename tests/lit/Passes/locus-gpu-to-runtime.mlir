// RUN: locus-opt %s --locus-gpu-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// Each launch becomes a call with the kernel's number, the grid, the block,
// the shared bytes, the address of the argument slots and their count. A
// buffer's slot is its aligned pointer, an f32's its bits. The PTX moves to
// the module's locus.cuda_kernels, with its NUL; the binaries go.
// CHECK: module attributes {gpu.container_module, locus.cuda_kernels = [{name = "k0", ptx = "// ptx of m0\00"}, {name = "k1", ptx = "// ptx of m1\00"}]}
// CHECK-NOT: gpu.binary
// CHECK: func.func private @locus_cuda_launch(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @launcher
// CHECK: %[[SLOTS:.*]] = memref.alloca() : memref<2xi64>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: memref.store %[[PI]], %[[SLOTS]]
// CHECK: %[[BITS:.*]] = arith.bitcast %arg1 : f32 to i32
// CHECK: %[[WIDE:.*]] = arith.extui %[[BITS]] : i32 to i64
// CHECK: memref.store %[[WIDE]], %[[SLOTS]]
// CHECK: %[[K0:.*]] = arith.constant 0 : i64
// CHECK: call @locus_cuda_launch(%[[K0]], {{.*}}) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
// The second launch of k0 has the same number; k1 is 1.
// CHECK: %[[K0B:.*]] = arith.constant 0 : i64
// CHECK: call @locus_cuda_launch(%[[K0B]],
// CHECK: %[[K1:.*]] = arith.constant 1 : i64
// CHECK: call @locus_cuda_launch(%[[K1]],
// CHECK-NOT: gpu.launch_func
module attributes {gpu.container_module} {
  gpu.binary @m0 [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// ptx of m0\00">]
  gpu.binary @m1 [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// ptx of m1\00">]
  func.func @launcher(%x: memref<256xf32>, %s: f32) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @m0::@k0 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<256xf32>, %s : f32)
    gpu.launch_func @m0::@k0 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<256xf32>, %s : f32)
    gpu.launch_func @m1::@k1 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<256xf32>)
    return
  }
}

// -----

// A 16-bit float's slot is its bits too: the kernel reads the slot's first
// two bytes.
// CHECK-LABEL: func.func @half_args
// CHECK: %[[B:.*]] = arith.bitcast %arg0 : bf16 to i16
// CHECK: arith.extui %[[B]] : i16 to i64
// CHECK: %[[H:.*]] = arith.bitcast %arg1 : f16 to i16
// CHECK: arith.extui %[[H]] : i16 to i64
// CHECK: call @locus_cuda_launch
module attributes {gpu.container_module} {
  gpu.binary @bin [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "ptx">]
  func.func @half_args(%a: bf16, %h: f16) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @bin::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : bf16, %h : f16)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @bin [#gpu.object<#nvvm.target<chip = "sm_90">, bin = "cubin">]
  func.func @no_ptx() {
    %c1 = arith.constant 1 : index
    // expected-error @-3 {{has no PTX object; expected locus-gpu-modules-to-ptx}}
    gpu.launch_func @bin::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @bin [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "ptx">]
  func.func @vector_arg(%v: vector<4xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{passes a kernel argument of type 'vector<4xf32>', which the runtime cannot pass}}
    gpu.launch_func @bin::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%v : vector<4xf32>)
    return
  }
}
