#include "cvattn/modules/bat.hpp"

#include <memory>

#include "ops/ops.hpp"
#include "ops/spatial_settings.hpp"

namespace cvattn::cli::ops {

// timm BatNonLocalAttn: C, the reduced width, groups and block_size all come from the weights;
// block_size and groups given with --set must agree.
OpSpec bat() {
  return {
      "bat",
      "timm BatNonLocalAttn (grouped bilinear attentional transform, residual)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"block_size", SettingType::integer, "7", "block size b (must match ba.conv_p.weight)"},
       {"groups", SettingType::integer, "2", "groups (must match ba.conv1.conv.weight)"}},
      {{"output", "[N,C,H,W]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const BatNonLocalAttnOptions options =
            BatNonLocalAttnOptions::from_state_dict(*inv.weights);
        check_setting_matches(s, "bat", "block_size", options.block_size(), "ba.conv_p.weight");
        check_setting_matches(s, "bat", "groups", options.groups(), "ba.conv1.conv.weight");
        auto module = std::make_shared<BatNonLocalAttn>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.in_channels(), kAny, kAny}, "input", "bat");
        return [module, input] { return Outputs{{"output", module->forward(input)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
