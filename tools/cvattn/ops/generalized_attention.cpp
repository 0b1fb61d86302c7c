#include "cvattn/modules/generalized_attention.hpp"

#include <memory>

#include "ops/ops.hpp"
#include "ops/spatial_settings.hpp"

namespace cvattn::cli::ops {

// mmcv GeneralizedAttention. in_channels and position_embedding_dim come from the weights;
// num_heads and attention_type cannot (they select which keys exist) and come from --set, and
// loading names any key they disagree with. mmcv's uint8 local_constraint_map, when present,
// is ignored: cvattn computes the constraint.
OpSpec generalized_attention() {
  return {
      "generalized_attention",
      "mmcv GeneralizedAttention (Zhu et al. 2019 spatial attention study)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"num_heads", SettingType::integer, "9", "heads (E = C / num_heads)"},
       {"attention_type", SettingType::word, "1111",
        "which of the four terms (content-content, content-position, key bias, position bias)"},
       {"kv_stride", SettingType::integer, "2", "key/value subsampling"},
       {"q_stride", SettingType::integer, "1", "query subsampling (output upsampled bilinearly)"},
       {"position_embedding_dim", SettingType::integer, "-1",
        "sin/cos embedding width (-1: in_channels; must match appr_geom_fc_x)"},
       {"position_magnitude", SettingType::integer, "1", "multiplier of coordinate differences"},
       {"spatial_range", SettingType::integer, "-1", "local constraint radius (-1: none)"}},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,num_heads,Hq*Wq,Hkv*Wkv]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        StateDict weights = *inv.weights;
        const StateDict::Entry* lcm = weights.find("local_constraint_map");
        if (lcm != nullptr && lcm->integer) weights.erase("local_constraint_map");
        const GeneralizedAttentionOptions from =
            GeneralizedAttentionOptions::from_state_dict(weights);
        if (weights.contains("appr_geom_fc_x.weight") && s.integer("position_embedding_dim") > 0) {
          check_setting_matches(s, "generalized_attention", "position_embedding_dim",
                                from.position_embedding_dim(), "appr_geom_fc_x.weight");
        }
        const GeneralizedAttentionOptions options =
            GeneralizedAttentionOptions(from)
                .num_heads(s.integer("num_heads"))
                .attention_type(s.word("attention_type"))
                .kv_stride(s.integer("kv_stride"))
                .q_stride(s.integer("q_stride"))
                .position_magnitude(s.integer("position_magnitude"))
                .spatial_range(s.integer("spatial_range"));
        auto module = std::make_shared<GeneralizedAttention>(options);
        module->load_state_dict(weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.in_channels(), kAny, kAny}, "input",
                    "generalized_attention");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
