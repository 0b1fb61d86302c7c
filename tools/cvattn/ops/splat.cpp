#include <memory>
#include <string>

#include "cvattn/modules/split_attn.hpp"
#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

// timm SplitAttn. Channels, kernel size, attention width, bias and norm come from the weights
// for the --set radix and groups (the weights hold only their product); a --set kernel_size
// that differs from conv.weight's is an error.
OpSpec splat() {
  return {
      "splat",
      "timm SplitAttn (ResNeSt; channels, kernel, attention width, bias, bn0/bn1 from the "
      "weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"kernel_size", SettingType::integer, "3", "conv kernel size (must match the weights)"},
       {"stride", SettingType::integer, "1", "conv stride"},
       {"padding", SettingType::integer, "", "conv padding (default kernel_size // 2)", {}, true},
       {"dilation", SettingType::integer, "1", "conv dilation"},
       {"groups", SettingType::integer, "1", "cardinality"},
       {"radix", SettingType::integer, "2", "splits per cardinal group"}},
      {{"output", "[N,C_out,Ho,Wo]"}, {"attention", "[N,radix,C_out]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        SplitAttnOptions options = SplitAttnOptions::from_state_dict(
            *inv.weights, "", s.integer("radix"), s.integer("groups"));
        if (s.given("kernel_size") && s.integer("kernel_size") != options.kernel_size()) {
          gates::contradiction("splat", "kernel_size", std::to_string(s.integer("kernel_size")),
                               "'conv.weight' " +
                                   to_string(inv.weights->at("conv.weight").shape()) + " has a " +
                                   std::to_string(options.kernel_size()) + "x" +
                                   std::to_string(options.kernel_size()) + " kernel");
        }
        options.stride(s.integer("stride")).dilation(s.integer("dilation"));
        if (s.given("padding")) options.padding(s.integer("padding"));
        auto module = std::make_shared<SplitAttn>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.in_channels(), kAny, kAny}, "input", "splat");
        return gates::with_maps(inv, module, input, {maps::kAttention});
      },
  };
}

}  // namespace cvattn::cli::ops
