// kernel_source.cpp - the one reader of LOCUS_ABI_SOURCE_PREFIX records.
#include "kernel_source.h"

#include "locus/abi.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace locus::rt {
namespace {

/// The fields of one line, if it has exactly LOCUS_ABI_SOURCE_FIELDS.
bool splitFields(std::string_view line,
                 std::array<std::string_view, LOCUS_ABI_SOURCE_FIELDS> &out) {
  size_t n = 0;
  while (n < out.size()) {
    size_t tab = line.find('\t');
    out[n++] = line.substr(0, tab);
    if (tab == std::string_view::npos)
      break;
    line.remove_prefix(tab + 1);
    if (n == out.size())
      return false; // too many fields
  }
  return n == out.size();
}

SourceOp parseLine(std::string_view line) {
  std::array<std::string_view, LOCUS_ABI_SOURCE_FIELDS> f;
  SourceOp op;
  uint32_t count = 0;
  if (!splitFields(line, f) ||
      std::from_chars(f[0].data(), f[0].data() + f[0].size(), count).ptr !=
          f[0].data() + f[0].size() ||
      count == 0) {
    op.op = std::string(line);
    return op;
  }
  op.count = count;
  op.op = std::string(f[1]);
  op.at = std::string(f[2]);
  op.layer = std::string(f[3]);
  op.kind = std::string(f[4]);
  return op;
}

std::string describe(const SourceOp &op) {
  std::string text = op.op;
  if (op.count == 0)
    return text;
  if (!op.at.empty())
    text += " at " + op.at;
  if (op.kind == "named" && !op.layer.empty())
    text += " in " + op.layer;
  if (op.count > 1)
    text += " (x" + std::to_string(op.count) + ")";
  return text;
}

} // namespace

bool KernelSource::has(std::string_view name) const {
  std::string written = std::string(name) + " at ";
  return std::any_of(ops.begin(), ops.end(), [&](const SourceOp &op) {
    // An older artifact's text names an op as "locus.conv2d at m.cpp:3".
    return op.count > 0 ? op.op == name
                        : op.op.rfind(written, 0) == 0 ||
                              op.op.find("; " + written) != std::string::npos;
  });
}

KernelSource parseKernelSource(std::string_view text) {
  KernelSource source;
  text = text.substr(
      0, std::min<size_t>(text.size(), LOCUS_ABI_MAX_SOURCE_BYTES - 1));
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.empty())
      continue;
    source.ops.push_back(parseLine(line));
    if (!source.text.empty())
      source.text += "; ";
    source.text += describe(source.ops.back());
  }
  return source;
}

} // namespace locus::rt
