#include "cvattn/modules/halo_attn.hpp"

#include <memory>

#include "ops/ops.hpp"
#include "ops/spatial_settings.hpp"

namespace cvattn::cli::ops {

// timm HaloAttn. dim, dim_out, dim_head, num_heads and qkv_bias come from the weights (a
// num_heads given with --set must agree); block_size, halo_size, stride, avg_down and
// scale_pos_embed from --set (block_size + 2*halo_size must be the window of the weights'
// relative tables). feat_size is accepted and unused, as in timm.
OpSpec halo_attn() {
  return {
      "halo_attn",
      "timm HaloAttn (HaloNet blocked local self-attention with halos)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"feat_size", SettingType::pair, "", "unused (timm's argument compatibility)", {}, true},
       {"stride", SettingType::integer, "1", "2: strided query blocks (or AvgPool2d(2, 2))"},
       {"num_heads", SettingType::integer, "8", "attention heads (must match the weights)"},
       {"block_size", SettingType::integer, "8", "query block size"},
       {"halo_size", SettingType::integer, "3", "halo around each block"},
       {"avg_down", SettingType::boolean, "false",
        "with stride 2, average-pool the output instead of striding the queries"},
       {"scale_pos_embed", SettingType::boolean, "false", "scale the relative logits with q.k"}},
      {{"output", "[N,dim_out,H/stride,W/stride]"},
       {"attention", "[N,num_heads,num_blocks,(block_size/stride)^2,(block_size+2*halo_size)^2]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const HaloAttnOptions from = HaloAttnOptions::from_state_dict(*inv.weights);
        check_setting_matches(s, "halo_attn", "num_heads", from.num_heads(), "q.weight");
        const HaloAttnOptions options = HaloAttnOptions(from)
                                            .stride(s.integer("stride"))
                                            .block_size(s.integer("block_size"))
                                            .halo_size(s.integer("halo_size"))
                                            .avg_down(s.boolean("avg_down"))
                                            .scale_pos_embed(s.boolean("scale_pos_embed"));
        const std::int64_t win = options.block_size() + 2 * options.halo_size();
        const std::int64_t rows = inv.weights->at("pos_embed.height_rel").dim(0);
        CVATTN_CHECK(rows == 2 * win - 1, ValueError, "halo_attn: block_size ",
                     options.block_size(), " and halo_size ", options.halo_size(),
                     " make a window of ", win, ", but 'pos_embed.height_rel' has ", rows,
                     " rows (a window of ", (rows + 1) / 2, ")");
        auto module = std::make_shared<HaloAttn>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.dim(), kAny, kAny}, "input", "halo_attn");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
