//===- LocusDialect.cpp - dialect registration and attributes -------------===//

#include "locus/Dialect/LocusDialect.h"
#include "locus/abi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace locus;

#include "locus/Dialect/LocusOpsDialect.cpp.inc"
#include "locus/Dialect/LocusOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "locus/Dialect/LocusOpsAttrs.cpp.inc"

void LocusDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "locus/Dialect/LocusOpsAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "locus/Dialect/LocusOps.cpp.inc"
      >();
}

std::string locus::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += ShapedType::isDynamic(shape[i]) ? std::string("?")
                                           : std::to_string(shape[i]);
  }
  return out + "]";
}

//===----------------------------------------------------------------------===//
// #locus.device<cpu> / #locus.device<cuda:N>
//===----------------------------------------------------------------------===//

Attribute DeviceAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  SMLoc at = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  int64_t index = 0;
  DeviceKind kind;
  if (keyword == "cpu") {
    kind = DeviceKind::cpu;
  } else if (keyword == "cuda") {
    kind = DeviceKind::cuda;
    SMLoc indexAt = parser.getCurrentLocation();
    // Parsed signed: parseInteger into an unsigned wraps "-1" silently.
    if (parser.parseColon() || parser.parseInteger(index))
      return {};
    if (index < 0 || index > LOCUS_ABI_MAX_CUDA_ORDINAL) {
      parser.emitError(indexAt, "CUDA device index ")
          << index << " is out of range; expected 0 to "
          << LOCUS_ABI_MAX_CUDA_ORDINAL;
      return {};
    }
  } else {
    parser.emitError(at, "unknown device '")
        << keyword << "'; expected 'cpu' or 'cuda:N'";
    return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<DeviceAttr>(at, parser.getContext(), kind,
                                       static_cast<unsigned>(index));
}

void DeviceAttr::print(AsmPrinter &printer) const {
  printer << "<" << str() << ">";
}

std::string DeviceAttr::str() const {
  return isCpu() ? std::string("cpu") : "cuda:" + std::to_string(getIndex());
}

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 DeviceKind kind, unsigned index) {
  if (kind == DeviceKind::cpu && index != 0)
    return emitError() << "the cpu device has no index";
  return success();
}

//===----------------------------------------------------------------------===//
// #locus.init<full(v)> / #locus.init<uniform(a, b), seed = s>
//===----------------------------------------------------------------------===//

/// A double that parses back to the same bits and reads as a float literal.
static std::string exactDouble(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.17g", value);
  os.flush();
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc at = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(at, "unknown initialiser '")
        << keyword << "'; expected 'full', 'uniform' or 'normal'";
    return {};
  }
  double a = 0, b = 0;
  uint64_t seed = 0;
  if (parser.parseLParen() || parser.parseFloat(a))
    return {};
  if (*kind != InitKind::full) {
    if (parser.parseComma() || parser.parseFloat(b) || parser.parseRParen() ||
        parser.parseComma() || parser.parseKeyword("seed") ||
        parser.parseEqual() || parser.parseInteger(seed))
      return {};
  } else if (parser.parseRParen()) {
    return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<InitAttr>(at, parser.getContext(), *kind,
                                     llvm::APFloat(a), llvm::APFloat(b), seed);
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind()) << "(";
  printer << exactDouble(low());
  if (getKind() != InitKind::full) {
    printer << ", ";
    printer << exactDouble(high());
    printer << "), seed = " << getSeed() << ">";
    return;
  }
  printer << ")>";
}

// The signature is ODS's (genVerifyDecl): APFloat by value.
// NOLINTBEGIN(performance-unnecessary-value-param)
LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat aValue,
                               llvm::APFloat bValue, uint64_t seed) {
  // NOLINTEND(performance-unnecessary-value-param)
  if (&aValue.getSemantics() != &llvm::APFloat::IEEEdouble() ||
      &bValue.getSemantics() != &llvm::APFloat::IEEEdouble())
    return emitError() << "initialiser bounds must be f64 values";
  double a = aValue.convertToDouble(), b = bValue.convertToDouble();
  if (!std::isfinite(a) || !std::isfinite(b))
    return emitError() << "initialiser bounds must be finite";
  if (kind == InitKind::uniform && !(a <= b))
    return emitError() << "uniform(" << exactDouble(a) << ", " << exactDouble(b)
                       << ") needs a lower bound that is not above the upper";
  if (kind == InitKind::normal && !(b >= 0))
    return emitError() << "normal(" << exactDouble(a) << ", " << exactDouble(b)
                       << ") needs a standard deviation that is not negative";
  if (kind == InitKind::full && (b != 0 || seed != 0))
    return emitError() << "full(v) takes no upper bound and no seed";
  return success();
}
