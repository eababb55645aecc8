// A CNN training step over a dynamic batch (up to 16), as
// tests/unit/DynamicSizesTest.cpp records it: a convolution, BatchNorm
// (2-d and 1-d), max pooling, chunk and cat, dropout, a linear layer,
// cross-entropy and SGD with momentum.
#map = affine_map<()[s0] -> (s0, 3, 12, 12)>
#map1 = affine_map<()[s0] -> (s0)>
#map2 = affine_map<()[s0] -> (s0, 8, 12, 12)>
#map3 = affine_map<()[s0] -> (s0, 8, 6, 6)>
#map4 = affine_map<()[s0] -> (s0, 8)>
#map5 = affine_map<()[s0] -> (s0, 3)>
#map6 = affine_map<()[s0] -> (s0, 4, 6, 6)>
module {
  locus.graph @norm_cnn attributes {locus.symbols = [["batch", 16]]} {
    %x = locus.input "x" {locus.dims = #map} : tensor<16x3x12x12xf32>
    %t = locus.input "t" {locus.dims = #map1} : tensor<16xi64>
    %conv0.weight = locus.state "conv0.weight" parameter : tensor<8x3x3x3xf32> init <uniform(-0.19245008972987526, 0.19245008972987526), seed = 5050877886214956140>
    %conv0.bias = locus.state "conv0.bias" parameter : tensor<8xf32> init <uniform(-0.19245008972987526, 0.19245008972987526), seed = 6509787161630397929>
    %bn0.weight = locus.state "bn0.weight" parameter : tensor<8xf32> init <full(1.0)>
    %bn0.bias = locus.state "bn0.bias" parameter : tensor<8xf32> init <full(0.0)>
    %bn0.running_mean = locus.state "bn0.running_mean" buffer : tensor<8xf32> init <full(0.0)>
    %bn0.running_var = locus.state "bn0.running_var" buffer : tensor<8xf32> init <full(1.0)>
    %bn1.weight = locus.state "bn1.weight" parameter : tensor<8xf32> init <full(1.0)>
    %bn1.bias = locus.state "bn1.bias" parameter : tensor<8xf32> init <full(0.0)>
    %bn1.running_mean = locus.state "bn1.running_mean" buffer : tensor<8xf32> init <full(0.0)>
    %bn1.running_var = locus.state "bn1.running_var" buffer : tensor<8xf32> init <full(1.0)>
    %linear0.weight = locus.state "linear0.weight" parameter : tensor<3x8xf32> init <uniform(-0.35355339059327373, 0.35355339059327373), seed = 3396996536619506629>
    %linear0.bias = locus.state "linear0.bias" parameter : tensor<3xf32> init <uniform(-0.35355339059327373, 0.35355339059327373), seed = 5103648077052830919>
    %0 = locus.conv2d %x, %conv0.weight, %conv0.bias stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<16x3x12x12xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<16x8x12x12xf32>
    %result, %mean, %var = locus.batch_norm_train %0, %bn0.weight, %bn0.bias eps 1.000000e-05 {locus.eval_value = 1 : i64} : tensor<16x8x12x12xf32>, tensor<8xf32>
    %1 = locus.count %0 axes [0, 2, 3] : tensor<16x8x12x12xf32> -> tensor<f32>
    %2 = locus.constant dense<-1.000000e+00> : tensor<f32>
    %3 = locus.add %1, %2 : tensor<f32>
    %4 = locus.div %1, %3 : tensor<f32>
    %5 = locus.broadcast %4 [8] : tensor<f32> -> tensor<8xf32>
    %6 = locus.mul %var, %5 : tensor<8xf32>
    %7 = locus.constant dense<0.899999976> : tensor<f32>
    %8 = locus.broadcast %7 [8] : tensor<f32> -> tensor<8xf32>
    %9 = locus.mul %bn0.running_mean, %8 : tensor<8xf32>
    %10 = locus.constant dense<1.000000e-01> : tensor<f32>
    %11 = locus.broadcast %10 [8] : tensor<f32> -> tensor<8xf32>
    %12 = locus.mul %mean, %11 : tensor<8xf32>
    %13 = locus.add %9, %12 : tensor<8xf32>
    locus.assign %bn0.running_mean = %13 : tensor<8xf32>, tensor<8xf32>
    %14 = locus.constant dense<0.899999976> : tensor<f32>
    %15 = locus.broadcast %14 [8] : tensor<f32> -> tensor<8xf32>
    %16 = locus.mul %bn0.running_var, %15 : tensor<8xf32>
    %17 = locus.constant dense<1.000000e-01> : tensor<f32>
    %18 = locus.broadcast %17 [8] : tensor<f32> -> tensor<8xf32>
    %19 = locus.mul %6, %18 : tensor<8xf32>
    %20 = locus.add %16, %19 : tensor<8xf32>
    locus.assign %bn0.running_var = %20 : tensor<8xf32>, tensor<8xf32>
    %21 = locus.constant dense<9.99999974E-6> : tensor<f32> {locus.eval_only, locus.no_grad}
    %22 = locus.broadcast %21 [8] {locus.eval_only, locus.no_grad} : tensor<f32> -> tensor<8xf32>
    %23 = locus.add %bn0.running_var, %22 {locus.eval_only, locus.no_grad} : tensor<8xf32>
    %24 = locus.rsqrt %23 {locus.eval_only, locus.no_grad} : tensor<8xf32>
    %25 = locus.reshape %24 [1, 8, 1, 1] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8x1x1xf32>
    %26 = locus.reshape %bn0.running_mean [1, 8, 1, 1] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8x1x1xf32>
    %27 = locus.broadcast %26 [16, 8, 12, 12] {locus.dims = #map2, locus.eval_only, locus.no_grad} : tensor<1x8x1x1xf32> -> tensor<16x8x12x12xf32>
    %28 = locus.sub %0, %27 {locus.eval_only, locus.no_grad} : tensor<16x8x12x12xf32>
    %29 = locus.broadcast %25 [16, 8, 12, 12] {locus.dims = #map2, locus.eval_only, locus.no_grad} : tensor<1x8x1x1xf32> -> tensor<16x8x12x12xf32>
    %30 = locus.mul %28, %29 {locus.eval_only, locus.no_grad} : tensor<16x8x12x12xf32>
    %31 = locus.reshape %bn0.weight [1, 8, 1, 1] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8x1x1xf32>
    %32 = locus.broadcast %31 [16, 8, 12, 12] {locus.dims = #map2, locus.eval_only, locus.no_grad} : tensor<1x8x1x1xf32> -> tensor<16x8x12x12xf32>
    %33 = locus.mul %30, %32 {locus.eval_only, locus.no_grad} : tensor<16x8x12x12xf32>
    %34 = locus.reshape %bn0.bias [1, 8, 1, 1] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8x1x1xf32>
    %35 = locus.broadcast %34 [16, 8, 12, 12] {locus.dims = #map2, locus.eval_only, locus.no_grad} : tensor<1x8x1x1xf32> -> tensor<16x8x12x12xf32>
    %36 = locus.add %33, %35 {locus.eval_of = 1 : i64, locus.eval_only, locus.no_grad} : tensor<16x8x12x12xf32>
    %37 = locus.relu %result : tensor<16x8x12x12xf32>
    %38 = locus.max_pool2d %37 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<16x8x12x12xf32> -> tensor<16x8x6x6xf32>
    %39 = locus.slice %38 offsets [0, 0, 0, 0] sizes [16, 4, 6, 6] strides [1, 1, 1, 1] : tensor<16x8x6x6xf32> -> tensor<16x4x6x6xf32>
    %40 = locus.slice %38 offsets [0, 4, 0, 0] sizes [16, 4, 6, 6] strides [1, 1, 1, 1] : tensor<16x8x6x6xf32> -> tensor<16x4x6x6xf32>
    %41 = locus.tanh %40 : tensor<16x4x6x6xf32>
    %42 = locus.concat %41, %39 axis 1 : (tensor<16x4x6x6xf32>, tensor<16x4x6x6xf32>) -> tensor<16x8x6x6xf32>
    %rng.step = locus.state "rng.step" buffer : tensor<f32> init <full(0.0)>
    %43 = locus.constant dense<1.000000e+00> : tensor<f32>
    %44 = locus.add %rng.step, %43 : tensor<f32>
    %45 = locus.constant dense<0x4B800000> : tensor<f32>
    %46 = locus.cmp lt, %44, %45 : tensor<f32>
    %47 = locus.constant dense<0.000000e+00> : tensor<f32>
    %48 = locus.select %46, %44, %47 : tensor<i1>, tensor<f32>
    locus.assign %rng.step = %48 : tensor<f32>, tensor<f32>
    %49 = locus.random uniform [16, 8, 6, 6] seed -5209705544384289685 step %rng.step {locus.dims = #map3} : tensor<f32> -> tensor<16x8x6x6xf32>
    %50 = locus.constant dense<2.500000e-01> : tensor<f32>
    %51 = locus.broadcast %50 [16, 8, 6, 6] {locus.dims = #map3} : tensor<f32> -> tensor<16x8x6x6xf32>
    %52 = locus.cmp ge, %49, %51 : tensor<16x8x6x6xf32>
    %53 = locus.constant dense<1.33333337> : tensor<f32>
    %54 = locus.broadcast %53 [16, 8, 6, 6] {locus.dims = #map3} : tensor<f32> -> tensor<16x8x6x6xf32>
    %55 = locus.constant dense<0.000000e+00> : tensor<f32>
    %56 = locus.broadcast %55 [16, 8, 6, 6] {locus.dims = #map3} : tensor<f32> -> tensor<16x8x6x6xf32>
    %57 = locus.select %52, %54, %56 : tensor<16x8x6x6xi1>, tensor<16x8x6x6xf32>
    %58 = locus.mul %42, %57 {locus.eval_operand = 0 : i64} : tensor<16x8x6x6xf32>
    %59 = locus.mean %58 axes [2, 3] : tensor<16x8x6x6xf32> -> tensor<16x8xf32>
    %result_0, %mean_1, %var_2 = locus.batch_norm_train %59, %bn1.weight, %bn1.bias eps 1.000000e-05 {locus.eval_value = 2 : i64} : tensor<16x8xf32>, tensor<8xf32>
    %60 = locus.count %59 axes [0] : tensor<16x8xf32> -> tensor<f32>
    %61 = locus.constant dense<-1.000000e+00> : tensor<f32>
    %62 = locus.add %60, %61 : tensor<f32>
    %63 = locus.div %60, %62 : tensor<f32>
    %64 = locus.broadcast %63 [8] : tensor<f32> -> tensor<8xf32>
    %65 = locus.mul %var_2, %64 : tensor<8xf32>
    %66 = locus.constant dense<0.899999976> : tensor<f32>
    %67 = locus.broadcast %66 [8] : tensor<f32> -> tensor<8xf32>
    %68 = locus.mul %bn1.running_mean, %67 : tensor<8xf32>
    %69 = locus.constant dense<1.000000e-01> : tensor<f32>
    %70 = locus.broadcast %69 [8] : tensor<f32> -> tensor<8xf32>
    %71 = locus.mul %mean_1, %70 : tensor<8xf32>
    %72 = locus.add %68, %71 : tensor<8xf32>
    locus.assign %bn1.running_mean = %72 : tensor<8xf32>, tensor<8xf32>
    %73 = locus.constant dense<0.899999976> : tensor<f32>
    %74 = locus.broadcast %73 [8] : tensor<f32> -> tensor<8xf32>
    %75 = locus.mul %bn1.running_var, %74 : tensor<8xf32>
    %76 = locus.constant dense<1.000000e-01> : tensor<f32>
    %77 = locus.broadcast %76 [8] : tensor<f32> -> tensor<8xf32>
    %78 = locus.mul %65, %77 : tensor<8xf32>
    %79 = locus.add %75, %78 : tensor<8xf32>
    locus.assign %bn1.running_var = %79 : tensor<8xf32>, tensor<8xf32>
    %80 = locus.constant dense<9.99999974E-6> : tensor<f32> {locus.eval_only, locus.no_grad}
    %81 = locus.broadcast %80 [8] {locus.eval_only, locus.no_grad} : tensor<f32> -> tensor<8xf32>
    %82 = locus.add %bn1.running_var, %81 {locus.eval_only, locus.no_grad} : tensor<8xf32>
    %83 = locus.rsqrt %82 {locus.eval_only, locus.no_grad} : tensor<8xf32>
    %84 = locus.reshape %83 [1, 8] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8xf32>
    %85 = locus.reshape %bn1.running_mean [1, 8] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8xf32>
    %86 = locus.broadcast %85 [16, 8] {locus.dims = #map4, locus.eval_only, locus.no_grad} : tensor<1x8xf32> -> tensor<16x8xf32>
    %87 = locus.sub %59, %86 {locus.eval_only, locus.no_grad} : tensor<16x8xf32>
    %88 = locus.broadcast %84 [16, 8] {locus.dims = #map4, locus.eval_only, locus.no_grad} : tensor<1x8xf32> -> tensor<16x8xf32>
    %89 = locus.mul %87, %88 {locus.eval_only, locus.no_grad} : tensor<16x8xf32>
    %90 = locus.reshape %bn1.weight [1, 8] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8xf32>
    %91 = locus.broadcast %90 [16, 8] {locus.dims = #map4, locus.eval_only, locus.no_grad} : tensor<1x8xf32> -> tensor<16x8xf32>
    %92 = locus.mul %89, %91 {locus.eval_only, locus.no_grad} : tensor<16x8xf32>
    %93 = locus.reshape %bn1.bias [1, 8] {locus.eval_only, locus.no_grad} : tensor<8xf32> -> tensor<1x8xf32>
    %94 = locus.broadcast %93 [16, 8] {locus.dims = #map4, locus.eval_only, locus.no_grad} : tensor<1x8xf32> -> tensor<16x8xf32>
    %95 = locus.add %92, %94 {locus.eval_of = 2 : i64, locus.eval_only, locus.no_grad} : tensor<16x8xf32>
    %96 = locus.linear %result_0, %linear0.weight, %linear0.bias : tensor<16x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<16x3xf32>
    %97 = locus.cross_entropy %96, %t mean : tensor<16x3xf32>, tensor<16xi64> -> tensor<f32>
    locus.output "logits" = %96 : tensor<16x3xf32>
    locus.output "loss" = %97 : tensor<f32>
    %98 = locus.softmax %96 axis 1 : tensor<16x3xf32>
    %99 = locus.one_hot %t classes 3 : tensor<16xi64> -> tensor<16x3xf32>
    %100 = locus.sub %98, %99 : tensor<16x3xf32>
    %101 = locus.count %96 axes [0] : tensor<16x3xf32> -> tensor<f32>
    %102 = locus.broadcast %101 [16, 3] {locus.dims = #map5} : tensor<f32> -> tensor<16x3xf32>
    %103 = locus.div %100, %102 : tensor<16x3xf32>
    %104 = locus.matmul %103, %linear0.weight : tensor<16x3xf32>, tensor<3x8xf32> -> tensor<16x8xf32>
    %105 = locus.transpose %103 [1, 0] : tensor<16x3xf32> -> tensor<3x16xf32>
    %106 = locus.matmul %105, %result_0 {locus.gradient} : tensor<3x16xf32>, tensor<16x8xf32> -> tensor<3x8xf32>
    %107 = locus.sum %103 axes [0] {locus.gradient} : tensor<16x3xf32> -> tensor<3xf32>
    %input_grad, %weight_grad, %bias_grad = locus.batch_norm_train_grad %104, %59, %mean_1, %var_2, %bn1.weight eps 1.000000e-05 {locus.gradient = array<i64: 1, 2>} : tensor<16x8xf32>, tensor<8xf32>
    %108 = locus.reshape %input_grad [16, 8, 1, 1] : tensor<16x8xf32> -> tensor<16x8x1x1xf32>
    %109 = locus.broadcast %108 [16, 8, 6, 6] : tensor<16x8x1x1xf32> -> tensor<16x8x6x6xf32>
    %110 = locus.count %58 axes [2, 3] : tensor<16x8x6x6xf32> -> tensor<f32>
    %111 = locus.broadcast %110 [16, 8, 6, 6] {locus.dims = #map3} : tensor<f32> -> tensor<16x8x6x6xf32>
    %112 = locus.div %109, %111 : tensor<16x8x6x6xf32>
    %113 = locus.mul %112, %57 : tensor<16x8x6x6xf32>
    %114 = locus.slice %113 offsets [0, 0, 0, 0] sizes [16, 4, 6, 6] strides [1, 1, 1, 1] : tensor<16x8x6x6xf32> -> tensor<16x4x6x6xf32>
    %115 = locus.slice %113 offsets [0, 4, 0, 0] sizes [16, 4, 6, 6] strides [1, 1, 1, 1] : tensor<16x8x6x6xf32> -> tensor<16x4x6x6xf32>
    %116 = locus.constant dense<1.000000e+00> : tensor<f32>
    %117 = locus.broadcast %116 [16, 4, 6, 6] {locus.dims = #map6} : tensor<f32> -> tensor<16x4x6x6xf32>
    %118 = locus.mul %41, %41 : tensor<16x4x6x6xf32>
    %119 = locus.sub %117, %118 : tensor<16x4x6x6xf32>
    %120 = locus.mul %114, %119 : tensor<16x4x6x6xf32>
    %121 = locus.slice_grad %120 shape [16, 8, 6, 6] offsets [0, 4, 0, 0] strides [1, 1, 1, 1] {locus.dims = #map3} : tensor<16x4x6x6xf32> -> tensor<16x8x6x6xf32>
    %122 = locus.slice_grad %115 shape [16, 8, 6, 6] offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {locus.dims = #map3} : tensor<16x4x6x6xf32> -> tensor<16x8x6x6xf32>
    %123 = locus.add %121, %122 : tensor<16x8x6x6xf32>
    %124 = locus.max_pool2d_grad %37, %123 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<16x8x12x12xf32>, tensor<16x8x6x6xf32> -> tensor<16x8x12x12xf32>
    %125 = locus.constant dense<0.000000e+00> : tensor<f32>
    %126 = locus.broadcast %125 [16, 8, 12, 12] {locus.dims = #map2} : tensor<f32> -> tensor<16x8x12x12xf32>
    %127 = locus.cmp gt, %37, %126 : tensor<16x8x12x12xf32>
    %128 = locus.constant dense<0.000000e+00> : tensor<f32>
    %129 = locus.broadcast %128 [16, 8, 12, 12] {locus.dims = #map2} : tensor<f32> -> tensor<16x8x12x12xf32>
    %130 = locus.select %127, %124, %129 : tensor<16x8x12x12xi1>, tensor<16x8x12x12xf32>
    %input_grad_3, %weight_grad_4, %bias_grad_5 = locus.batch_norm_train_grad %130, %0, %mean, %var, %bn0.weight eps 1.000000e-05 {locus.gradient = array<i64: 1, 2>} : tensor<16x8x12x12xf32>, tensor<8xf32>
    %131 = locus.conv2d_weight_grad %x, %input_grad_3 weight_shape [8, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.gradient} : tensor<16x3x12x12xf32>, tensor<16x8x12x12xf32> -> tensor<8x3x3x3xf32>
    %132 = locus.sum %input_grad_3 axes [0, 2, 3] {locus.gradient} : tensor<16x8x12x12xf32> -> tensor<8xf32>
    %optimizer.param_groups.0.lr = locus.state "optimizer.param_groups.0.lr" buffer : tensor<f32> init <full(0.10000000000000001)>
    %conv0.weight.momentum_buffer = locus.state "conv0.weight.momentum_buffer" buffer : tensor<8x3x3x3xf32> init <full(0.0)>
    %133:2 = locus.sgd %conv0.weight, %131, %conv0.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8x3x3x3xf32>, tensor<8x3x3x3xf32> -> tensor<8x3x3x3xf32>, tensor<8x3x3x3xf32>
    locus.assign %conv0.weight = %133#0 : tensor<8x3x3x3xf32>, tensor<8x3x3x3xf32>
    locus.assign %conv0.weight.momentum_buffer = %133#1 : tensor<8x3x3x3xf32>, tensor<8x3x3x3xf32>
    %conv0.bias.momentum_buffer = locus.state "conv0.bias.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %134:2 = locus.sgd %conv0.bias, %132, %conv0.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %conv0.bias = %134#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %conv0.bias.momentum_buffer = %134#1 : tensor<8xf32>, tensor<8xf32>
    %bn0.weight.momentum_buffer = locus.state "bn0.weight.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %135:2 = locus.sgd %bn0.weight, %weight_grad_4, %bn0.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %bn0.weight = %135#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %bn0.weight.momentum_buffer = %135#1 : tensor<8xf32>, tensor<8xf32>
    %bn0.bias.momentum_buffer = locus.state "bn0.bias.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %136:2 = locus.sgd %bn0.bias, %bias_grad_5, %bn0.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %bn0.bias = %136#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %bn0.bias.momentum_buffer = %136#1 : tensor<8xf32>, tensor<8xf32>
    %bn1.weight.momentum_buffer = locus.state "bn1.weight.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %137:2 = locus.sgd %bn1.weight, %weight_grad, %bn1.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %bn1.weight = %137#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %bn1.weight.momentum_buffer = %137#1 : tensor<8xf32>, tensor<8xf32>
    %bn1.bias.momentum_buffer = locus.state "bn1.bias.momentum_buffer" buffer : tensor<8xf32> init <full(0.0)>
    %138:2 = locus.sgd %bn1.bias, %bias_grad, %bn1.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
    locus.assign %bn1.bias = %138#0 : tensor<8xf32>, tensor<8xf32>
    locus.assign %bn1.bias.momentum_buffer = %138#1 : tensor<8xf32>, tensor<8xf32>
    %linear0.weight.momentum_buffer = locus.state "linear0.weight.momentum_buffer" buffer : tensor<3x8xf32> init <full(0.0)>
    %139:2 = locus.sgd %linear0.weight, %106, %linear0.weight.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>, tensor<3x8xf32>
    locus.assign %linear0.weight = %139#0 : tensor<3x8xf32>, tensor<3x8xf32>
    locus.assign %linear0.weight.momentum_buffer = %139#1 : tensor<3x8xf32>, tensor<3x8xf32>
    %linear0.bias.momentum_buffer = locus.state "linear0.bias.momentum_buffer" buffer : tensor<3xf32> init <full(0.0)>
    %140:2 = locus.sgd %linear0.bias, %107, %linear0.bias.momentum_buffer lr %optimizer.param_groups.0.lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<3xf32>
    locus.assign %linear0.bias = %140#0 : tensor<3xf32>, tensor<3xf32>
    locus.assign %linear0.bias.momentum_buffer = %140#1 : tensor<3xf32>, tensor<3xf32>
  }
}
