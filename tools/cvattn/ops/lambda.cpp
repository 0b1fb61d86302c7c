#include <memory>

#include "cvattn/modules/lambda_layer.hpp"
#include "ops/ops.hpp"
#include "ops/spatial_settings.hpp"

namespace cvattn::cli::ops {

// timm LambdaLayer. Everything but stride is in the weights: conv_lambda.* (local lambda
// convolution, r from its kernel) or pos_emb (relative embeddings, feat_size from its shape);
// num_heads from norm_q / K. Given --set values must agree (r=0 stands for timm's r=None).
OpSpec lambda() {
  return {
      "lambda",
      "timm LambdaLayer (content and position lambdas, intra-depth 1)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"feat_size",
        SettingType::pair,
        "",
        "(h, w) of the input for the relative-position "
        "variant (no r); must match pos_emb",
        {},
        true},
       {"stride", SettingType::integer, "1", "2: AvgPool2d(2, 2) after the layer"},
       {"num_heads", SettingType::integer, "4", "heads (must match the weights)"},
       {"r", SettingType::integer, "9",
        "lambda convolution size (must match conv_lambda; 0: "
        "relative embeddings)"}},
      {{"output", "[N,C,H/stride,W/stride]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const LambdaLayerOptions from = LambdaLayerOptions::from_state_dict(*inv.weights);
        check_setting_matches(s, "lambda", "num_heads", from.num_heads(), "norm_q.running_mean");
        check_setting_matches(s, "lambda", "r", from.r(),
                              from.r() > 0 ? "conv_lambda.weight" : "pos_emb");
        if (from.r() == 0)
          check_pair_matches(s, "lambda", "feat_size", from.feat_size(), "pos_emb");
        const LambdaLayerOptions options = LambdaLayerOptions(from).stride(s.integer("stride"));
        auto module = std::make_shared<LambdaLayer>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.dim(), kAny, kAny}, "input", "lambda");
        return [module, input] { return Outputs{{"output", module->forward(input)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
