#map = affine_map<()[s0] -> (s0, 12)>
#map1 = affine_map<()[s0] -> (s0)>
#map2 = affine_map<()[s0] -> (s0, 3)>
#map3 = affine_map<()[s0] -> (s0, 8)>
module {
  locus.graph @mlp attributes {locus.symbols = [["batch", 16]]} {
    %x = locus.input "x" {locus.dims = #map} : tensor<16x12xf32>
    %t = locus.input "t" {locus.dims = #map1} : tensor<16xi64>
    %linear0.weight = locus.state "linear0.weight" parameter : tensor<8x12xf32> init <uniform(-0.28867513459481292, 0.28867513459481292), seed = 3396996536619506629>
    %linear0.bias = locus.state "linear0.bias" parameter : tensor<8xf32> init <uniform(-0.28867513459481292, 0.28867513459481292), seed = 5103648077052830919>
    %linear1.weight = locus.state "linear1.weight" parameter : tensor<3x8xf32> init <uniform(-0.35355339059327373, 0.35355339059327373), seed = 14275059410712000461>
    %linear1.bias = locus.state "linear1.bias" parameter : tensor<3xf32> init <uniform(-0.35355339059327373, 0.35355339059327373), seed = 12854942558282921572>
    %0 = locus.linear %x, %linear0.weight, %linear0.bias : tensor<16x12xf32>, tensor<8x12xf32>, tensor<8xf32> -> tensor<16x8xf32>
    %1 = locus.relu %0 : tensor<16x8xf32>
    %2 = locus.linear %1, %linear1.weight, %linear1.bias : tensor<16x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<16x3xf32>
    %3 = locus.cross_entropy %2, %t mean : tensor<16x3xf32>, tensor<16xi64> -> tensor<f32>
    locus.output "logits" = %2 : tensor<16x3xf32>
    %4 = locus.softmax %2 axis 1 : tensor<16x3xf32>
    locus.output "probs" = %4 : tensor<16x3xf32>
    locus.output "loss" = %3 : tensor<f32>
    %5 = locus.mean %x axes [0] : tensor<16x12xf32> -> tensor<12xf32>
    locus.output "col_mean" = %5 : tensor<12xf32>
    %6 = locus.softmax %2 axis 1 : tensor<16x3xf32>
    %7 = locus.one_hot %t classes 3 : tensor<16xi64> -> tensor<16x3xf32>
    %8 = locus.sub %6, %7 : tensor<16x3xf32>
    %9 = locus.count %2 axes [0] : tensor<16x3xf32> -> tensor<f32>
    %10 = locus.broadcast %9 [16, 3] {locus.dims = #map2} : tensor<f32> -> tensor<16x3xf32>
    %11 = locus.div %8, %10 : tensor<16x3xf32>
    %12 = locus.matmul %11, %linear1.weight : tensor<16x3xf32>, tensor<3x8xf32> -> tensor<16x8xf32>
    %13 = locus.transpose %11 [1, 0] : tensor<16x3xf32> -> tensor<3x16xf32>
    %14 = locus.matmul %13, %1 {locus.gradient} : tensor<3x16xf32>, tensor<16x8xf32> -> tensor<3x8xf32>
    %15 = locus.sum %11 axes [0] {locus.gradient} : tensor<16x3xf32> -> tensor<3xf32>
    %16 = locus.constant dense<0.000000e+00> : tensor<f32>
    %17 = locus.broadcast %16 [16, 8] {locus.dims = #map3} : tensor<f32> -> tensor<16x8xf32>
    %18 = locus.cmp gt, %1, %17 : tensor<16x8xf32>
    %19 = locus.constant dense<0.000000e+00> : tensor<f32>
    %20 = locus.broadcast %19 [16, 8] {locus.dims = #map3} : tensor<f32> -> tensor<16x8xf32>
    %21 = locus.select %18, %12, %20 : tensor<16x8xi1>, tensor<16x8xf32>
    %22 = locus.transpose %21 [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %23 = locus.matmul %22, %x {locus.gradient} : tensor<8x16xf32>, tensor<16x12xf32> -> tensor<8x12xf32>
    %24 = locus.sum %21 axes [0] {locus.gradient} : tensor<16x8xf32> -> tensor<8xf32>
    %optimizer.param_groups.0.lr = locus.state "optimizer.param_groups.0.lr" buffer : tensor<f32> init <full(0.10000000000000001)>
    %linear0.weight.momentum_buffer = locus.state "linear0.weight.momentum_buffer" buffer : tensor<8x12xf32> init <full(0.0)>
    %25:2 = locus.sgd %linear0.weight, %23, %linear0.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8x12xf32>, tensor<8x12xf32> -> tensor<8x12xf32>, tensor<8x12xf32>
    locus.assign %linear0.weight = %25#0 : tensor<8x12xf32>, tensor<8x12xf32>
    locus.assign %linear0.weight.momentum_buffer = %25#1 : tensor<8x12xf32>, tensor<8x12xf32>
    %linear0.bias.momentum_buffer = locus.state "linear0.bias.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %26:2 = locus.sgd %linear0.bias, %24, %linear0.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %linear0.bias = %26#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %linear0.bias.momentum_buffer = %26#1 : tensor<8xf32>, tensor<8xf32>
    %linear1.weight.momentum_buffer = locus.state "linear1.weight.momentum_buffer" buffer : tensor<3x8xf32> init <full(0.0)>
    %27:2 = locus.sgd %linear1.weight, %14, %linear1.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>, tensor<3x8xf32>
    locus.assign %linear1.weight = %27#0 : tensor<3x8xf32>, tensor<3x8xf32>
    locus.assign %linear1.weight.momentum_buffer = %27#1 : tensor<3x8xf32>, tensor<3x8xf32>
    %linear1.bias.momentum_buffer = locus.state "linear1.bias.momentum_buffer" buffer : tensor<3xf32> init <full(0.0)>
    %28:2 = locus.sgd %linear1.bias, %15, %linear1.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<3xf32>
    locus.assign %linear1.bias = %28#0 : tensor<3xf32>, tensor<3xf32>
    locus.assign %linear1.bias.momentum_buffer = %28#1 : tensor<3xf32>, tensor<3xf32>
  }
}
