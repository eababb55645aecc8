// One recording, two compiles. The graph stands for what the frontend
// records in training mode: a dropout's product marked to be its input in
// evaluation (%d), a value paired with its evaluation form (%t with %e,
// recorded only for evaluation), an evaluation-only op nothing reads
// (%unread), and a state update.
// RUN: locus-opt %s --locus-select-mode | FileCheck %s --check-prefix=TRAIN
// RUN: locus-opt %s --locus-select-mode=mode=train | FileCheck %s --check-prefix=TRAIN
// RUN: locus-opt %s --locus-select-mode=mode=eval | FileCheck %s --check-prefix=EVAL

// Training computes what was recorded: the evaluation ops go, the marks
// too, and the rest stays (the update included).
// TRAIN-LABEL: locus.graph @step
// TRAIN: %[[D:.*]] = locus.mul %x, %noise : tensor<4xf32>
// TRAIN-NEXT: %[[T:.*]] = locus.relu %[[D]] : tensor<4xf32>
// TRAIN-NEXT: %[[Y:.*]] = locus.mul %[[T]], %w : tensor<4xf32>
// TRAIN-NEXT: %[[G:.*]] = locus.add %[[Y]], %w : tensor<4xf32>
// TRAIN-NEXT: locus.assign %w = %[[G]]
// TRAIN-NEXT: locus.output "y" = %[[Y]]
// TRAIN-NOT: locus.exp
// TRAIN-NOT: locus.neg
// TRAIN-NOT: locus.eval

// Evaluation: the dropout is its input, %t its evaluation form, no state
// is written, and what only the update read is gone. Inputs and state
// stay, read or not.
// EVAL-LABEL: locus.graph @step
// EVAL-NEXT: %x = locus.input "x"
// EVAL-NEXT: %noise = locus.input "noise"
// EVAL-NEXT: %w = locus.state "w"
// EVAL-NEXT: %[[E:.*]] = locus.exp %x : tensor<4xf32>
// EVAL-NEXT: %[[Y:.*]] = locus.mul %[[E]], %w : tensor<4xf32>
// EVAL-NEXT: locus.output "y" = %[[Y]]
// EVAL-NEXT: }
locus.graph @step {
  %x = locus.input "x" : tensor<4xf32>
  %noise = locus.input "noise" : tensor<4xf32>
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  %d = locus.mul %x, %noise {locus.eval_operand = 0 : i64} : tensor<4xf32>
  %t = locus.relu %d {locus.eval_value = 7 : i64} : tensor<4xf32>
  %e = locus.exp %d {locus.eval_only, locus.eval_of = 7 : i64} : tensor<4xf32>
  %unread = locus.neg %x {locus.eval_only} : tensor<4xf32>
  %y = locus.mul %t, %w : tensor<4xf32>
  %g = locus.add %y, %w : tensor<4xf32>
  locus.assign %w = %g : tensor<4xf32>, tensor<4xf32>
  locus.output "y" = %y : tensor<4xf32>
}
