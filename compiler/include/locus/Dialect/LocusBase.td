//===- LocusBase.td - the locus dialect, its enums and attributes ---------===//
//
// The dialect that user graphs are recorded in. Values are ranked, statically
// shaped tensors (f32, i64 for class labels, i1 for comparison results).
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_BASE_TD
#define LOCUS_BASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Locus_Dialect : Dialect {
  let name = "locus";
  let cppNamespace = "::locus";
  let summary = "A lazy dataflow graph with explicit device placement.";
  let description = [{
    The `locus` dialect holds a graph recorded by user code: sources (inputs,
    persistent state, constants), tensor computations, and the ops that
    move values between devices: `locus.to` (the user's explicit move, a pin),
    `locus.to_device_of` (autodiff's move back, resolved by placement) and
    `locus.copy` (a transfer the compiler inserts).

    Every op carries the location of the user's source line that recorded it,
    so diagnostics from every later pass point at user code.

    Element types: `f32` for data, `i64` for class labels, `i1` for the result
    of comparisons. Shapes are static. Broadcasting is never implicit: the
    frontend records a `locus.broadcast` where numpy rules apply.
  }];
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Locus_DeviceKind : I32EnumAttr<"DeviceKind", "kind of device", [
    I32EnumAttrCase<"cpu", 0>,
    I32EnumAttrCase<"cuda", 1>
  ]> {
  let cppNamespace = "::locus";
  let genSpecializedAttr = 0;
}

def Locus_PlacementKind : I32EnumAttr<"PlacementKind",
    "why an op is on its device", [
    I32EnumAttrCase<"pinned", 0>,
    I32EnumAttrCase<"follows_operands", 1>,
    I32EnumAttrCase<"no_kernel", 2>,
    I32EnumAttrCase<"cost", 3>,
    I32EnumAttrCase<"colocated", 4>,
    I32EnumAttrCase<"soft", 5>,
    I32EnumAttrCase<"host_io", 6>,
    I32EnumAttrCase<"created", 7>,
    I32EnumAttrCase<"policy", 8>,
    I32EnumAttrCase<"whole_step", 9>
  ]> {
  let cppNamespace = "::locus";
  let genSpecializedAttr = 0;
}

def Locus_InitKind : I32EnumAttr<"InitKind", "initialiser of a state tensor", [
    I32EnumAttrCase<"full", 0>,
    I32EnumAttrCase<"uniform", 1>,
    I32EnumAttrCase<"normal", 2>
  ]> {
  let cppNamespace = "::locus";
  let genSpecializedAttr = 0;
}

def Locus_StateRole : I32EnumAttr<"StateRole", "role of a persistent tensor", [
    I32EnumAttrCase<"parameter", 0>,
    I32EnumAttrCase<"buffer", 1>
  ]> {
  let cppNamespace = "::locus";
}

def Locus_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>
  ]> {
  let cppNamespace = "::locus";
}

def Locus_Reduction : I32EnumAttr<"ReductionKind", "how a loss is reduced", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"sum", 1>
  ]> {
  let cppNamespace = "::locus";
}

def Locus_Distribution : I32EnumAttr<"Distribution",
    "distribution of locus.random", [
    I32EnumAttrCase<"uniform", 0>,
    I32EnumAttrCase<"normal", 1>
  ]> {
  let cppNamespace = "::locus";
}

//===----------------------------------------------------------------------===//
// Kinds of op: one fact each, declared with the op and read by the fuser,
// placement, the CUDA kernel registry and the cost model (no list of op
// names in C++).
//===----------------------------------------------------------------------===//

// Computed element by element (after numpy broadcasting): joins any kernel
// of its device under --locus-fuse-kernels.
def Locus_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::locus::OpTrait";
}

// Not a computation of its own: the graph's structure (graphs, and kernels
// with their yields), its sources and outputs, moves between devices and
// writes of state. The plan does its work; it is never fused into a
// kernel, given a CUDA kernel or costed as one.
def Locus_Structural : NativeOpTrait<"Structural"> {
  let cppNamespace = "::locus::OpTrait";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Locus_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Locus_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Locus_DeviceAttr : Locus_Attr<"Device", "device"> {
  let summary = "A device: `cpu` or `cuda:N`.";
  let description = [{
    Names the device a value lives on or an op runs on:

    ```mlir
    #locus.device<cpu>
    #locus.device<cuda:0>
    ```

    The CPU has no index; a CUDA device always has one.
  }];
  let parameters = (ins "::locus::DeviceKind":$kind, "unsigned":$index);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isCpu() const { return getKind() == ::locus::DeviceKind::cpu; }
    bool isCuda() const { return getKind() == ::locus::DeviceKind::cuda; }
    /// `cpu` or `cuda:N`, as users write it.
    std::string str() const;
  }];
}

def Locus_PlacementAttr : Locus_Attr<"Placement", "placement"> {
  let summary = "Why an op runs where it runs; data, not prose.";
  let description = [{
    Attached to every op by `--locus-place-devices`:

    ```mlir
    #locus.placement<kind = pinned>
    #locus.placement<kind = follows_operands>
    #locus.placement<kind = no_kernel, device = #locus.device<cuda:0>>
    #locus.placement<kind = cost, cpu_ns = 1200, cuda_ns = 340>
    #locus.placement<kind = soft>
    #locus.placement<kind = whole_step, cpu_ns = 1160000, cuda_ns = 520000>
    ```

    - `pinned`: a `locus.to`, or a source created on a device (the op's own
      location is the user's line);
    - `follows_operands`: strict policy, the op runs where its operands live;
    - `no_kernel`: `device` has no kernel for the op, so it fell back;
    - `cost`: chosen by the cost model; both estimates in nanoseconds;
    - `colocated`: follows the ops it feeds (state, constants);
    - `soft`: a CUDA device was asked for but none is a target;
    - `host_io`: an input fed, or an output read, on the host;
    - `created`: a source created without a device lives on the CPU, as in
      PyTorch (strict);
    - `policy`: where the policy puts it (prefer-gpu: it has a CUDA kernel;
      cpu: everything on the CPU);
    - `whole_step`: auto put every kernel of the step on one GPU, where the
      step replays as one CUDA graph, since that step's estimate
      (`cuda_ns`) is below the best split's (`cpu_ns`, the whole step's
      too).
  }];
  let parameters = (ins
    EnumParameter<Locus_PlacementKind>:$kind,
    OptionalParameter<"std::optional<int64_t>">:$cpu_ns,
    OptionalParameter<"std::optional<int64_t>">:$cuda_ns,
    OptionalParameter<"::locus::DeviceAttr">:$device
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

def Locus_InitAttr : Locus_Attr<"Init", "init"> {
  let summary = "A deterministic initialiser for persistent state.";
  let description = [{
    How a state tensor gets its first value:

    ```mlir
    #locus.init<full(0.0)>
    #locus.init<uniform(-0.316, 0.316), seed = 7>
    ```

    `full(v)` fills with `v`. `uniform(a, b)` draws element `i` from
    U[a, b), and `normal(mean, std)` from N(mean, std^2), with the
    counter-based generator `locus_init_fill` in the runtime (splitmix64 of
    `seed` and `i`), so every device and every build produces the same
    values.
  }];
  let parameters = (ins "::locus::InitKind":$kind, "::llvm::APFloat":$a,
                        "::llvm::APFloat":$b, "uint64_t":$seed);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// `v` of full(v); the lower bound of uniform(a, b).
    double low() const { return getA().convertToDouble(); }
    /// The upper bound of uniform(a, b); 0 for full(v).
    double high() const { return getB().convertToDouble(); }
  }];
}

#endif // LOCUS_BASE_TD
