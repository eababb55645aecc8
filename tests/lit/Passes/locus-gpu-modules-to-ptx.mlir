// RUN: locus-opt %s --locus-gpu-modules-to-ptx --split-input-file --verify-diagnostics | FileCheck %s

// Every module becomes a binary of its name, in the modules' order, each
// holding the PTX of its own kernel for the target's chip; the modules go.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: gpu.module
// CHECK: gpu.binary @m0 [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {O = 2 : i32}, assembly = "{{.*}}.target sm_90{{.*}}.entry k0{{.*}}st.global.f32{{.*}}">]
// CHECK-NEXT: gpu.binary @m1 [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, properties = {O = 3 : i32}, assembly = "{{.*}}.entry k1{{.*}}">]
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @m0 [#nvvm.target<chip = "sm_90">] {
    llvm.func @k0(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, nvvm.kernel} {
      llvm.store %v, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @m1 [#nvvm.target<O = 3, chip = "sm_90">] {
    llvm.func @k1() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// A module needs exactly one target.
module attributes {gpu.container_module} {
  // expected-error @+1 {{needs exactly one target attribute (from nvvm-attach-target); it has 0}}
  gpu.module @none {
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{needs exactly one target attribute (from nvvm-attach-target); it has 2}}
  gpu.module @two [#nvvm.target<chip = "sm_90">, #nvvm.target<chip = "sm_80">] {
  }
}

// -----

// A module its target cannot translate (here, ops that are not LLVM's) is
// named, after the translation's own reason.
module attributes {gpu.container_module} {
  // expected-error @+2 {{Failed creating the llvm::Module}}
  // expected-error @+1 {{could not be compiled to PTX}}
  gpu.module @bad [#nvvm.target<chip = "sm_90">] {
    // expected-error @+1 {{cannot be converted to LLVM IR}}
    func.func @f() {
      return
    }
  }
}
