#include "cvattn/modules/dynamic_conv.hpp"

#include <memory>
#include <string>

#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

// Dynamic convolution (docs/modules.md §17). K, channels, kernel size, hidden width, bias and
// groups come from the weights (a --set groups that differs is an error); stride, padding,
// dilation and temperature from --set.
OpSpec dynamic_conv() {
  return {
      "dynamic_conv",
      "dynamic convolution (Chen et al. 2020; the public port's Dynamic_conv2d keys)",
      {{"input", "[N,Ci,H,W]"}},
      true,
      {{"stride", SettingType::pair, "1", "conv stride"},
       {"padding", SettingType::pair, "0", "conv zero padding"},
       {"dilation", SettingType::pair, "1", "conv dilation"},
       {"groups", SettingType::integer, "1", "conv groups (must match the weights)"},
       {"temperature", SettingType::real, "1", "softmax temperature of the kernel attention"}},
      {{"output", "[N,Co,Ho,Wo]"}, {"attention", "[N,K]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        auto options = DynamicConv2dOptions::from_state_dict(*inv.weights);
        if (s.given("groups") && s.integer("groups") != options.groups()) {
          gates::contradiction("dynamic_conv", "groups", std::to_string(s.integer("groups")),
                               "'weight' " + to_string(inv.weights->at("weight").shape()) +
                                   " and " + "'attention.fc1.weight' " +
                                   to_string(inv.weights->at("attention.fc1.weight").shape()) +
                                   " make groups " + std::to_string(options.groups()));
        }
        options.stride(s.pair("stride"))
            .padding(s.pair("padding"))
            .dilation(s.pair("dilation"))
            .temperature(s.real("temperature"));
        auto module = std::make_shared<DynamicConv2d>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.in_channels(), kAny, kAny}, "input", "dynamic_conv");
        return gates::with_maps(inv, module, input, {maps::kAttention});
      },
  };
}

}  // namespace cvattn::cli::ops
