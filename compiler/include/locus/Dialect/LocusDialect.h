//===- LocusDialect.h - the locus dialect -----------------------*- C++ -*-===//
//
// Include this to use the locus dialect's ops and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DIALECT_LOCUSDIALECT_H
#define LOCUS_DIALECT_LOCUSDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "locus/Dialect/LocusOpsDialect.h.inc"
#include "locus/Dialect/LocusOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "locus/Dialect/LocusOpsAttrs.h.inc"

// The kinds of op (LocusBase.td): traits without methods, asked with
// op->hasTrait<locus::OpTrait::Elementwise>(). They follow MLIR's trait
// pattern (mlir::Op<...> derives from them and makes them), so their
// constructors stay public.
namespace locus::OpTrait {
/// Computed element by element, after numpy broadcasting.
template <typename ConcreteType>
// NOLINTNEXTLINE(bugprone-crtp-constructor-accessibility)
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {
};
/// Not a computation of its own: structure, sources, outputs, moves, state
/// writes.
template <typename ConcreteType>
// NOLINTNEXTLINE(bugprone-crtp-constructor-accessibility)
class Structural : public mlir::OpTrait::TraitBase<ConcreteType, Structural> {};
} // namespace locus::OpTrait

#define GET_OP_CLASSES
#include "locus/Dialect/LocusOps.h.inc"

namespace locus {

/// Discardable attributes that --locus-place-devices sets on every op of a
/// graph: where it runs (#locus.device) and why (#locus.placement).
inline constexpr llvm::StringLiteral kDeviceAttrName = "locus.device";
inline constexpr llvm::StringLiteral kPlacementAttrName = "locus.placement";
/// Set by --locus-autocast on a product or convolution it gave 16-bit
/// operands: the type it computes in (its operands'), for the dump.
inline constexpr llvm::StringLiteral kAutocastAttrName = "locus.autocast";
/// Set on a placed locus.graph: the policy and the target devices.
inline constexpr llvm::StringLiteral kPolicyAttrName = "locus.policy";
inline constexpr llvm::StringLiteral kTargetsAttrName = "locus.targets";
/// Set on a kernel function by --locus-outline-kernels: for each result,
/// the argument whose buffer the plan may write it into (a state that the
/// kernel reads and the graph then assigns: an update in place), or -1.
/// The kernel must not write such a result before it is done reading that
/// argument (--locus-write-results-in-place, --locus-map-to-gpu).
inline constexpr llvm::StringLiteral kResultsMayAliasAttrName =
    "locus.results_may_alias";
/// Set on a graph by --locus-insert-transfers: {copies, load_time_copies,
/// bytes_per_step, bytes_at_load}.
inline constexpr llvm::StringLiteral kTransfersAttrName = "locus.transfers";
/// Set on a placed locus.graph when placement was soft (no CUDA target):
/// says what ran on the CPU instead.
inline constexpr llvm::StringLiteral kSoftNoteAttrName = "locus.soft_placement";
/// On a module of kernel functions after --locus-merge-kernels: each
/// function merged away (by name) and the identical one that stayed, whose
/// code its entry point calls.
inline constexpr llvm::StringLiteral kKernelAliasesAttrName =
    "locus.kernel_aliases";
/// Set on a module by --locus-parallelize: the loop bodies it outlined.
inline constexpr llvm::StringLiteral kParallelBodiesAttrName =
    "locus.parallel_bodies";
/// Set on a module by --locus-gpu-to-runtime: [{name, ptx}] by kernel number.
inline constexpr llvm::StringLiteral kCudaKernelsAttrName =
    "locus.cuda_kernels";
/// Set on a graph by --locus-fuse-kernels: how many kernels it made.
inline constexpr llvm::StringLiteral kKernelsAttrName = "locus.kernels";

/// "[100, 10]": how every locus diagnostic writes a shape.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace locus

#endif // LOCUS_DIALECT_LOCUSDIALECT_H
