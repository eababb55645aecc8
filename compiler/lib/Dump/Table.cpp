//===- Table.cpp - the table and summary ----------------------------------===//
//
// locus-dump --format=text (the default; table and summary print either
// half): one line per op (what it is, its shape, the device it runs on and
// why, the user's line), then the summary: ops per device, copies, the
// estimated step and the warnings.
//
//===----------------------------------------------------------------------===//

#include "DumpImpl.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace locus::dump;
using namespace locus::dump::detail;

void locus::dump::printTable(const Report &report, llvm::raw_ostream &os) {
  size_t wLabel = 2, wShape = 5, wDevice = 6, wReason = 6;
  for (const Row &row : report.rows) {
    wLabel = std::max(wLabel, row.label.size());
    wShape = std::max(wShape, row.shape.size());
    wDevice = std::max(wDevice, row.device.size());
    wReason = std::max(wReason, row.reasonText.size());
  }
  auto line = [&](llvm::StringRef id, llvm::StringRef label,
                  llvm::StringRef shape, llvm::StringRef device,
                  llvm::StringRef reason, llvm::StringRef source) {
    os << llvm::left_justify(id, 4) << "  " << llvm::left_justify(label, wLabel)
       << "  " << llvm::left_justify(shape, wShape) << "  "
       << llvm::left_justify(device, wDevice) << "  "
       << llvm::left_justify(reason, wReason) << "  " << source << "\n";
  };
  line("#", "op", "shape", "device", "reason", "source");
  for (const Row &row : report.rows)
    line(std::to_string(row.id), row.label, row.shape, row.device,
         row.reasonText, shortSource(row.source));
}

void locus::dump::printSummary(const Report &report, llvm::raw_ostream &os) {
  os << "graph @" << report.graph << ": policy " << report.policy
     << ", targets " << llvm::join(report.targets, ", ") << "\n";
  if (!report.dynamicSizes.empty())
    os << "dynamic sizes: " << report.dynamicSizes
       << " (placed and estimated at the bounds)\n";
  os << "ops per device:";
  for (const auto &[device, count] : report.opsPerDevice)
    os << " " << device << " " << count << ";";
  os << "\n";
  os << "copies: " << report.copiesPerStep << " per step ("
     << bytesText(report.bytesPerStep) << "), " << report.copiesAtLoad
     << " at load (" << bytesText(report.bytesAtLoad) << ")\n";
  if (!report.buckets.empty()) {
    os << "data-parallel: " << report.buckets.size()
       << " gradient buckets averaged over the ranks per step ("
       << bytesText(report.bucketBytes()) << ")\n";
    for (const Report::Bucket &b : report.buckets)
      os << "  bucket " << b.number << " on " << b.device << ": " << b.gradients
         << " gradients, " << bytesText(b.bytes) << "\n";
  }
  os << "estimated step time:";
  for (const auto &[device, ns] : report.stepNsPerDevice)
    os << " " << device << " " << nanos(ns) << ";";
  os << " copies " << nanos(report.copyNsPerStep) << "; run "
     << nanos(report.runNs) << "; total " << nanos(report.stepNs())
     << " (devices run one after another in this estimate)\n";
  if (!report.graphDevice.empty())
    os << "cuda graph: every kernel on " << report.graphDevice
       << ", so the step replays as one CUDA graph"
       << (report.dynamicSizes.empty() ? "" : " per size it runs at")
       << " (launches estimated so)\n";
  os << "cost profile: " << report.costProfile << "\n";
  if (report.warnings.empty()) {
    os << "warnings: none\n";
    return;
  }
  os << "warnings:\n";
  for (const Warning &warning : report.warnings)
    os << "  - " << (warning.note ? "note: " : "") << warning.text << "\n";
}
