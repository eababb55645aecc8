//===- Json.cpp - the report as JSON --------------------------------------===//
//
// locus-dump --format=json: every row with its reason, source and estimates,
// and the summary (schema locus-dump/1, docs/locus-dump.md). The HTML page
// embeds the same JSON (Html.cpp).
//
//===----------------------------------------------------------------------===//

#include "DumpImpl.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace locus;
using namespace locus::dump;
using namespace locus::dump::detail;

/// The summary's warnings as JSON strings ("note: " before a note).
static llvm::json::Array warningTexts(const Report &report) {
  llvm::json::Array texts;
  for (const Warning &warning : report.warnings)
    texts.push_back((warning.note ? "note: " : "") + warning.text);
  return texts;
}

/// The data-parallel gradient buckets: number, device, gradients, bytes.
static llvm::json::Array bucketsOf(const Report &report) {
  llvm::json::Array out;
  for (const Report::Bucket &b : report.buckets)
    out.push_back(llvm::json::Object{{"bucket", b.number},
                                     {"device", b.device},
                                     {"gradients", b.gradients},
                                     {"bytes", b.bytes}});
  return out;
}

llvm::json::Value locus::dump::detail::toJson(const Report &report) {
  llvm::json::Array ops;
  for (const Row &row : report.rows) {
    llvm::json::Object source{{"file", row.source.file},
                              {"line", row.source.line},
                              {"column", row.source.column}};
    if (!row.source.node.empty())
      source["node"] = row.source.node;
    if (row.source.callerLine)
      source["called_from"] = llvm::json::Object{
          {"file", row.source.callerFile}, {"line", row.source.callerLine}};
    llvm::json::Object reason{{"kind", row.reasonKind},
                              {"text", row.reasonText}};
    if (auto attr = row.op->getAttrOfType<PlacementAttr>(kPlacementAttrName)) {
      if (std::optional<int64_t> ns = attr.getCpuNs())
        reason["cpu_ns"] = *ns;
      if (std::optional<int64_t> ns = attr.getCudaNs())
        reason["cuda_ns"] = *ns;
      if (attr.getDevice())
        reason["device"] = attr.getDevice().str();
    }
    llvm::json::Object op{
        {"id", row.id},
        {"op", row.opName},
        {"label", row.label},
        {"shape", row.shape},
        {"bytes", row.bytes},
        {"device", row.device},
        {"reason", std::move(reason)},
        {"source", std::move(source)},
        {"estimate_ns",
         llvm::json::Object{{"cpu", row.cpuNs}, {"cuda", row.cudaNs}}},
        {"operands", llvm::json::Array(row.operands)}};
    if (row.isCopy)
      op["copy"] = llvm::json::Object{{"load_time", row.loadTime},
                                      {"estimate_ns", row.copyNs}};
    if (!row.layer.empty())
      op["layer"] = row.layer;
    if (!row.precision.empty())
      op["precision"] = row.precision;
    ops.push_back(std::move(op));
  }
  llvm::json::Object perDevice, stepNs;
  for (const auto &[device, count] : report.opsPerDevice)
    perDevice[device] = count;
  for (const auto &[device, ns] : report.stepNsPerDevice)
    stepNs[device] = ns;
  stepNs["copies"] = report.copyNsPerStep;
  stepNs["run"] = report.runNs;
  return llvm::json::Object{
      {"schema", "locus-dump/1"},
      {"graph", report.graph},
      {"policy", report.policy},
      {"targets", llvm::json::Array(report.targets)},
      {"dynamic_sizes", report.dynamicSizes.empty()
                            ? llvm::json::Value(nullptr)
                            : llvm::json::Value(report.dynamicSizes)},
      {"cuda_graph_device", report.graphDevice.empty()
                                ? llvm::json::Value(nullptr)
                                : llvm::json::Value(report.graphDevice)},
      {"soft_placement", report.softNote.empty()
                             ? llvm::json::Value(nullptr)
                             : llvm::json::Value(report.softNote)},
      {"ops", std::move(ops)},
      {"summary", llvm::json::Object{{"ops_per_device", std::move(perDevice)},
                                     {"copies_per_step", report.copiesPerStep},
                                     {"copies_at_load", report.copiesAtLoad},
                                     {"bytes_per_step", report.bytesPerStep},
                                     {"bytes_at_load", report.bytesAtLoad},
                                     {"step_ns", std::move(stepNs)},
                                     {"buckets", bucketsOf(report)},
                                     {"cost_profile", report.costProfile},
                                     {"warnings", warningTexts(report)}}}};
}

void locus::dump::printJson(const Report &report, llvm::raw_ostream &os) {
  os << llvm::formatv("{0:2}", toJson(report)) << "\n";
}
