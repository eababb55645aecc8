//===- LinalgToBlas.cpp - --locus-linalg-to-blas --------------------------===//
//
// Matrix products on buffers become calls to the runtime's locus_sgemm; see
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "locus-linalg-to-blas"

namespace locus {
#define GEN_PASS_DEF_LOCUSLINALGTOBLAS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// A buffer sgemm can take: f32 (bf16 or f16 for locus_gemm_16's A and
/// B), static shape, its rows' elements next to
/// each other (innermost stride 1) at static strides and offset, rows not
/// overlapping. A slice of a packed weight (a row block of attention's
/// in_proj_weight) is one: sgemm reads it at its offset with the rows'
/// stride as leading dimension.
struct BlasOperand {
  MemRefType type;
  int64_t offset = 0;
  SmallVector<int64_t> strides;
};

std::optional<BlasOperand> blasOperand(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  BlasOperand o;
  // With dynamic sizes any size, stride or the offset may be dynamic (read
  // from the buffer at the call); the rows are unit-strided, and when the
  // row stride and length are both static the rows do not overlap.
  if (!type ||
      !(type.getElementType().isF32() || type.getElementType().isBF16() ||
        type.getElementType().isF16()) ||
      type.getRank() < 2 ||
      failed(getStridesAndOffset(type, o.strides, o.offset)) ||
      o.strides.back() != 1)
    return std::nullopt;
  int64_t rowStride = o.strides[type.getRank() - 2],
          rowLength = type.getShape().back();
  if (!ShapedType::isDynamic(rowStride) && !ShapedType::isDynamic(rowLength) &&
      rowStride < rowLength)
    return std::nullopt;
  o.type = type;
  return o;
}

class LinalgToBlasPass
    : public locus::impl::LocusLinalgToBlasBase<LinalgToBlasPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> products;
    module.walk([&](Operation *op) {
      if (isa<linalg::MatmulOp, linalg::MatmulTransposeAOp,
              linalg::MatmulTransposeBOp, linalg::BatchMatmulOp,
              linalg::BatchMatmulTransposeAOp, linalg::BatchMatmulTransposeBOp>(
              op))
        products.push_back(op);
    });
    for (Operation *op : products)
      rewrite(module, op);
  }

private:
  /// `name`'s declaration: sgemm's arguments, after locus_gemm_16's
  /// element type (`typed`).
  static func::FuncOp declaration(ModuleOp module, StringRef name, bool typed) {
    Builder b(module.getContext());
    Type i64 = b.getI64Type(), i32 = b.getI32Type(), f32 = b.getF32Type();
    SmallVector<Type> args{i64, i64, i64, i64, i64, i64, i64, i32,
                           i64, i64, i64, i32, f32, i64, i64, i64};
    if (typed)
      args.insert(args.begin(), i32);
    return declareRuntimeFunction(module, name, b.getFunctionType(args, {}));
  }

  /// The plan's code of a 16-bit element type (locus_gemm_16's first
  /// argument).
  static int32_t halfCode(Type element) {
    return element.isBF16() ? LOCUS_PLAN_BF16 : LOCUS_PLAN_F16;
  }

  /// The linalg.fill of zeros into `c` that is the last write before `op`
  /// in its block (only ops without memory effects in between), or null.
  static linalg::FillOp zeroFillOf(Operation *op, Value c) {
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      if (auto fill = dyn_cast<linalg::FillOp>(prev)) {
        if (fill.getOutputs().front() != c)
          return nullptr;
        Attribute value;
        if (matchPattern(fill.getInputs().front(), m_Constant(&value)))
          if (auto f = dyn_cast<FloatAttr>(value); f && f.getValue().isZero())
            return fill;
        return nullptr;
      }
      if (!isMemoryEffectFree(prev))
        return nullptr;
    }
    return nullptr;
  }

  /// What writes a 16-bit product's result in its operands' type: the
  /// only reader of a fresh f32 C (through reshapes) that rounds it, whole
  /// and in order, to `element` into a buffer of contiguous rows.
  struct Rounding {
    linalg::GenericOp round;
    SmallVector<Operation *> dead; // the views, C's free and C, in order
    BlasOperand out;
  };

  /// `op`'s Rounding when its C (`c`, zero-filled before it) is one, with
  /// only ops free of memory effects between `op` and the rounding.
  static std::optional<Rounding> roundingOf(Operation *op, Value c,
                                            Type element) {
    auto alloc = c.getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != op->getBlock())
      return std::nullopt;
    Rounding r;
    Value view = c;
    for (;;) {
      Operation *reader = nullptr;
      // (Its zero fill is gone: any other fill or free of a view is a
      // reader, and there is no rounding.)
      for (Operation *user : view.getUsers()) {
        if (user == op || (view == c && isa<memref::DeallocOp>(user)))
          continue;
        if (reader)
          return std::nullopt; // C read twice
        reader = user;
      }
      if (!reader || reader->getBlock() != op->getBlock() ||
          !op->isBeforeInBlock(reader))
        return std::nullopt;
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(reader)) {
        r.dead.push_back(reader);
        view = reader->getResult(0);
        continue;
      }
      auto generic = dyn_cast<linalg::GenericOp>(reader);
      if (!generic || !isRounding(generic, view, element))
        return std::nullopt;
      r.round = generic;
      break;
    }
    for (Operation *between = op->getNextNode(); between != r.round;
         between = between->getNextNode())
      if (!isMemoryEffectFree(between))
        return std::nullopt;
    Value out = r.round.getDpsInitOperand(0)->get();
    std::optional<BlasOperand> o = blasOperand(out);
    if (!o || !isContiguous(*o))
      return std::nullopt;
    r.out = *o;
    std::reverse(r.dead.begin(), r.dead.end());
    for (Operation *user : c.getUsers())
      if (isa<memref::DeallocOp>(user))
        r.dead.push_back(user);
    r.dead.push_back(alloc);
    return r;
  }

  /// Whether `generic` only rounds all of `in` (f32) to `element`, element
  /// by element in the same order.
  static bool isRounding(linalg::GenericOp generic, Value in, Type element) {
    if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
        generic.getDpsInputOperand(0)->get() != in ||
        generic.getNumParallelLoops() != generic.getNumLoops() ||
        !llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) ||
        getElementTypeOrSelf(generic.getDpsInitOperand(0)->get().getType()) !=
            element)
      return false;
    Block &body = generic.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    auto trunc = yield.getOperand(0).getDefiningOp<arith::TruncFOp>();
    return body.getOperations().size() == 2 && trunc &&
           trunc.getIn() == body.getArgument(0) && !trunc.getRoundingmodeAttr();
  }

  /// Whether `o`'s elements are all next to each other in row-major order.
  static bool isContiguous(const BlasOperand &o) {
    if (o.type.getLayout().isIdentity())
      return true;
    int64_t expected = 1;
    for (int64_t d = o.type.getRank() - 1; d >= 0; --d) {
      if (o.strides[d] != expected || o.type.isDynamicDim(d))
        return false;
      expected *= o.type.getDimSize(d);
    }
    return !ShapedType::isDynamic(o.offset);
  }

  void rewrite(ModuleOp module, Operation *op) {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (!linalgOp.hasPureBufferSemantics()) {
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                              << op->getLoc() << ": loops (on tensors)\n");
      return;
    }
    Value a = op->getOperand(0), bv = op->getOperand(1), c = op->getOperand(2);
    std::optional<BlasOperand> oa = blasOperand(a), ob = blasOperand(bv),
                               oc = blasOperand(c);
    // The output stays a whole buffer (it is written).
    if (!oa || !ob || !oc || !oc->type.getLayout().isIdentity()) {
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << op->getName() << " at "
                 << op->getLoc() << ": loops (a buffer sgemm cannot take)\n");
      return;
    }
    // f32 products call `callee`; bf16 or f16 operands into an f32
    // accumulator call its 16-bit sibling: locus_gemm_16 on the host,
    // locus_cuda_gemm_16 (cublasGemmEx) on a GPU.
    Type element = oa->type.getElementType();
    bool half = !element.isF32();
    StringRef halfCallee = callee == LOCUS_ABI_SGEMM
                               ? StringRef(LOCUS_ABI_GEMM_16)
                               : StringRef(LOCUS_ABI_CUDA_GEMM_16);
    if (element != ob->type.getElementType() ||
        !oc->type.getElementType().isF32() ||
        (half && callee != LOCUS_ABI_SGEMM && callee != LOCUS_ABI_CUDA_SGEMM &&
         callee != LOCUS_ABI_CUDA_SGEMM_TF32)) {
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                              << op->getLoc() << ": loops (element types)\n");
      return;
    }
    bool batched = isa<linalg::BatchMatmulOp, linalg::BatchMatmulTransposeAOp,
                       linalg::BatchMatmulTransposeBOp>(op);
    bool transA =
        isa<linalg::MatmulTransposeAOp, linalg::BatchMatmulTransposeAOp>(op);
    bool transB =
        isa<linalg::MatmulTransposeBOp, linalg::BatchMatmulTransposeBOp>(op);
    unsigned r = batched ? 1 : 0;
    // A product into a buffer just filled with zeros needs no fill: BLAS
    // overwrites C when beta is 0.
    float beta = 1.0f;
    if (linalg::FillOp fill = zeroFillOf(op, c)) {
      fill->erase();
      beta = 0.0f;
    }
    // A 16-bit product whose f32 C is only rounded to its operands' type
    // writes that type itself (locus_gemm_16's LOCUS_GEMM_C_16BIT).
    std::optional<Rounding> rounding;
    if (half && beta == 0.0f)
      rounding = roundingOf(op, c, element);
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] " << op->getName() << " at " << op->getLoc()
               << ": " << (half ? halfCallee : StringRef(callee)) << " beta "
               << beta << (rounding ? ", rounded to 16 bits" : "") << "\n");
    // A rounded call takes the rounding's place, where its output (maybe
    // a view made after the product) is defined.
    OpBuilder b(rounding ? rounding->round.getOperation() : op);
    Location loc = op->getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIntOp>(loc, v, 64);
    };
    // A size: a constant, or read from the buffer when it is dynamic.
    auto dim = [&](Value buffer, unsigned d) -> Value {
      int64_t size = cast<MemRefType>(buffer.getType()).getDimSize(d);
      if (!ShapedType::isDynamic(size))
        return i64(size);
      Value index = b.create<memref::DimOp>(loc, buffer, d);
      return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
    };
    // A static size made again where the call takes it (as the IR had it
    // before sizes could be dynamic).
    auto again = [&](Value v) -> Value {
      if (auto c = v.getDefiningOp<arith::ConstantIntOp>())
        return i64(c.value());
      return v;
    };
    auto times = [&](Value x, Value y) -> Value {
      return b.createOrFold<arith::MulIOp>(loc, x, y);
    };
    // A is [m, k], or [k, m] read transposed (made in the order the call
    // takes them).
    Value batch = batched ? dim(a, 0) : i64(1);
    Value m = dim(a, transA ? r + 1 : r);
    // (C goes when the call rounds: N from B then.)
    Value n = rounding ? dim(bv, transB ? r : r + 1) : dim(c, r + 1);
    Value k = dim(a, transA ? r : r + 1);
    // A dynamic stride or offset, read from the buffer's descriptor.
    auto metadata = [&](Value buffer, int64_t value, int which) -> Value {
      if (!ShapedType::isDynamic(value))
        return i64(value);
      auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, buffer);
      Value index =
          which < 0 ? Value(meta.getOffset()) : Value(meta.getStrides()[which]);
      return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
    };
    // The aligned pointer is the base buffer's: a view adds its offset.
    auto pointer = [&](Value buffer, const BlasOperand &o) -> Value {
      Value index =
          b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer);
      Value address = b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
      if (o.offset == 0)
        return address;
      auto bytes = static_cast<int64_t>(
          o.type.getElementType().getIntOrFloatBitWidth() / 8);
      Value offset = ShapedType::isDynamic(o.offset)
                         ? times(metadata(buffer, o.offset, -1), i64(bytes))
                         : i64(o.offset * bytes);
      return b.create<arith::AddIOp>(loc, address, offset);
    };
    // Leading dimension: the stride of the stored matrix's rows; batch
    // stride: the stride of the batch (m * k and k * n in one product).
    auto ld = [&](Value buffer, const BlasOperand &o) {
      return metadata(buffer, o.strides[r], static_cast<int>(r));
    };
    auto batchStride = [&](Value buffer, const BlasOperand &o, Value x,
                           Value y) {
      return batched ? metadata(buffer, o.strides[0], 0) : times(x, y);
    };
    SmallVector<Value> args{
        batch,
        m,
        n,
        k,
        pointer(a, *oa),
        ld(a, *oa),
        batchStride(a, *oa, m, k),
        b.create<arith::ConstantIntOp>(loc, transA ? 1 : 0, 32),
        pointer(bv, *ob),
        ld(bv, *ob),
        batchStride(bv, *ob, k, n),
        b.create<arith::ConstantIntOp>(loc, transB ? 1 : 0, 32),
        b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(beta)),
        rounding ? pointer(rounding->round.getDpsInitOperand(0)->get(),
                           rounding->out)
                 : pointer(c, *oc),
        again(n),
        times(m, n)};
    if (half)
      args.insert(args.begin(),
                  b.create<arith::ConstantIntOp>(
                      loc,
                      halfCode(element) | (rounding ? LOCUS_GEMM_C_16BIT : 0),
                      32));
    b.create<func::CallOp>(
        loc, declaration(module, half ? halfCallee : StringRef(callee), half),
        args);
    op->erase();
    if (rounding) {
      rounding->round->erase();
      for (Operation *dead : rounding->dead)
        dead->erase();
      ++numRounded;
    }
    ++numCalls;
  }
};

} // namespace

func::FuncOp locus::declareRuntimeFunction(ModuleOp module, StringRef name,
                                           FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto func = b.create<func::FuncOp>(module.getLoc(), name, type);
  func.setPrivate();
  return func;
}
