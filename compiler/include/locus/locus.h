//===- locus.h - the Locus recording frontend -------------------*- C++ -*-===//
//
// Everything a user program needs to record a graph:
//
//   locus::Graph g("train_step");
//   auto x = g.input("x", {100, 10});
//   locus::nn::Linear fc(g, 10, 2);
//   auto loss = locus::nn::MSELoss()(fc(x), g.input("y", {100, 2}));
//   g.output("loss", loss);
//   std::cout << g.str();
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_LOCUS_H
#define LOCUS_LOCUS_H

#include "locus/Frontend/Graph.h"
#include "locus/Frontend/Nn.h"

#endif // LOCUS_LOCUS_H
