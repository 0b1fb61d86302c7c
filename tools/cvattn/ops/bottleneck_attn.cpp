#include "cvattn/modules/bottleneck_attn.hpp"

#include <memory>

#include "ops/ops.hpp"
#include "ops/spatial_settings.hpp"

namespace cvattn::cli::ops {

// timm BottleneckAttn. dim, dim_head, qkv_bias and the relative tables' feat_size come from the
// weights; num_heads (which splits the qkv channels), stride and scale_pos_embed from --set.
OpSpec bottleneck_attn() {
  return {
      "bottleneck_attn",
      "timm BottleneckAttn (BoTNet self-attention with relative position logits)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"feat_size", SettingType::pair, "", "(h, w) of the input; must match the weights"},
       {"stride", SettingType::integer, "1", "2: AvgPool2d(2, 2) after the attention"},
       {"num_heads", SettingType::integer, "4", "attention heads"},
       {"scale_pos_embed", SettingType::boolean, "false",
        "scale the relative logits with q.k (softmax((q.k + rel) * scale))"}},
      {{"output", "[N,dim_out,H/stride,W/stride]"}, {"attention", "[N,num_heads,H*W,H*W]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const BottleneckAttnOptions from = BottleneckAttnOptions::from_state_dict(*inv.weights);
        check_pair_matches(s, "bottleneck_attn", "feat_size", from.feat_size(),
                           "pos_embed.height_rel");
        const BottleneckAttnOptions options = BottleneckAttnOptions(from)
                                                  .num_heads(s.integer("num_heads"))
                                                  .stride(s.integer("stride"))
                                                  .scale_pos_embed(s.boolean("scale_pos_embed"));
        auto module = std::make_shared<BottleneckAttn>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.dim(), options.feat_size().h, options.feat_size().w},
                    "input", "bottleneck_attn");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
