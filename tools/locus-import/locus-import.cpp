// locus-import.cpp - an ONNX model as a Locus graph, printed.
//
//   locus-import model.onnx [-o model.mlir] [--shape NAME=DxDx...]...
//                [--no-locations]
//
// Prints the graph importOnnx() records (locus IR, each op located at its
// ONNX node) to stdout or -o. The initializers' values stay with the
// in-process graph: compile the .onnx itself (locus-compile model.onnx) to
// keep them in an artifact.

#include "OnnxShapes.h"

#include "locus/Import/Onnx.h"
#include "locus/Support/ToolMain.h"
#include "locus/locus_runtime.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

int usage() {
  std::cerr << "usage: locus-import model.onnx [-o model.mlir] "
               "[--shape NAME=DxDx...]... [--dynamic NAME=BOUND]... "
               "[--no-locations]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string input, output;
  std::vector<std::string> shapes, dynamicSizes;
  bool locations = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "-o" || arg == "--shape") && i + 1 < argc) {
      (arg == "-o" ? output : shapes.emplace_back()) = argv[++i];
    } else if (arg.rfind("--shape=", 0) == 0) {
      shapes.push_back(arg.substr(8));
    } else if (arg == "--dynamic" && i + 1 < argc) {
      dynamicSizes.emplace_back(argv[++i]);
    } else if (arg.rfind("--dynamic=", 0) == 0) {
      dynamicSizes.push_back(arg.substr(10));
    } else if (arg == "--no-locations") {
      locations = false;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg.empty() || arg[0] == '-' || !input.empty()) {
      return usage();
    } else {
      input = arg;
    }
  }
  if (input.empty())
    return usage();
  return locus::runTool("locus-import", std::cerr, [&] {
    locus::OnnxImportOptions options;
    locus::tools::parseShapes(shapes, options);
    locus::tools::parseDynamicSizes(dynamicSizes, options);
    locus::Graph graph = locus::importOnnx(input, options);
    std::string text = graph.str({.locations = locations});
    if (output.empty()) {
      std::cout << text;
      return 0;
    }
    if (locus_status_t s =
            locus_file_write_atomic(output.c_str(), text.data(), text.size())) {
      std::cerr << "locus-import: " << locus_status_message(s) << "\n";
      locus_status_free(s);
      return 1;
    }
    return 0;
  });
}
