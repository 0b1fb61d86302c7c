#include <memory>
#include <string>

#include "cvattn/modules/gather_excite.hpp"
#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

// timm GatherExcite. extra_params, its norm, use_mlp and R come from the weights; extent,
// add_maxpool and gate_layer from --set. With extra params and extent 0 the global gather
// conv's kernel is feat_size: taken from the weights when not given, an error when it differs.
OpSpec ge() {
  return {
      "ge",
      "timm GatherExcite (extra_params, norm, use_mlp and R from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"extent", SettingType::integer, "0", "gather extent (0: global; else even)"},
       {"feat_size",
        SettingType::pair,
        "",
        "spatial size for extent 0 with extra params",
        {},
        true},
       {"add_maxpool", SettingType::boolean, "false", "blend in max pooling (no extra params)"},
       gates::gate_layer_setting("sigmoid")},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,C,H,W]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const StateDict& w = *inv.weights;
        GatherExciteOptions options = GatherExciteOptions::from_state_dict(w)
                                          .extent(s.integer("extent"))
                                          .add_maxpool(s.boolean("add_maxpool"))
                                          .gate_layer(gates::gate_layer(inv));
        if (options.extra_params()) {
          std::int64_t convs = 0;
          while (w.contains("gather.conv" + std::to_string(convs + 1) + ".weight")) ++convs;
          const std::int64_t e = options.extent();
          std::int64_t want = 1;
          if (e > 0) {
            want = 0;
            for (std::int64_t v = e; v >= 2; v /= 2) ++want;
          }
          if (e >= 0 && convs != want) {
            gates::contradiction("ge", "extent", std::to_string(e),
                                 "they hold " + std::to_string(convs) + " gather convs, extent " +
                                     std::to_string(e) + " builds " + std::to_string(want));
          }
          if (e == 0 && s.given("feat_size")) {
            const Shape& k = w.at("gather.conv1.weight").shape();
            if (s.pair("feat_size") != Pair2(k[2], k[3])) {
              gates::contradiction("ge", "feat_size", gates::pair_text(s.pair("feat_size")),
                                   "'gather.conv1.weight' " + to_string(k) + " has a " +
                                       std::to_string(k[2]) + "x" + std::to_string(k[3]) +
                                       " kernel");
            }
          }
          if (e == 0) {
            const Shape& k = w.at("gather.conv1.weight").shape();
            options.feat_size(Pair2(k[2], k[3]));
          }
        } else if (s.given("feat_size")) {
          options.feat_size(s.pair("feat_size"));  // unused without extra params, as in timm
        }
        auto module = std::make_shared<GatherExcite>(options);
        module->load_state_dict(w);
        const Tensor input = inv.input("input");
        check_rank(input, 4, "input", "ge");
        return gates::with_maps(inv, module, input, {maps::kAttention});
      },
  };
}

}  // namespace cvattn::cli::ops
