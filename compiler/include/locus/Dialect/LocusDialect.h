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

#define GET_OP_CLASSES
#include "locus/Dialect/LocusOps.h.inc"

namespace locus {

/// "[100, 10]": how every locus diagnostic writes a shape.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace locus

#endif // LOCUS_DIALECT_LOCUSDIALECT_H
