#include "cvattn/modules/cond_conv.hpp"

#include <memory>

#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

// timm CondConv2d with the routing weights as an input. The flattened weight holds neither
// the input channels nor the kernel size: Ci comes from the input, the kernel size from --set
// (timm's default 3), and a kernel size or groups the weight cannot hold is an error naming
// both.
OpSpec cond_conv() {
  return {
      "cond_conv",
      "timm CondConv2d (num_experts, bias and Co from the weights, Ci from the input)",
      {{"input", "[N,Ci,H,W]"}, {"routing_weights", "[N,num_experts]"}},
      true,
      {{"kernel_size", SettingType::pair, "3", "kernel size of every expert"},
       {"stride", SettingType::pair, "1", "conv stride"},
       {"padding", SettingType::pair, "", "conv padding (default timm's '': symmetric)", {}, true},
       {"dilation", SettingType::pair, "1", "conv dilation"},
       {"groups", SettingType::integer, "1", "conv groups"}},
      {{"output", "[N,Co,Ho,Wo]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const Tensor input = inv.input("input");
        const Tensor routing = inv.input("routing_weights");
        check_rank(input, 4, "input", "cond_conv");
        auto options = CondConv2dOptions::from_state_dict(
            *inv.weights, input.dim(1), s.pair("kernel_size"), s.integer("groups"));
        options.stride(s.pair("stride")).dilation(s.pair("dilation"));
        if (s.given("padding")) options.padding(s.pair("padding"));
        auto module = std::make_shared<CondConv2d>(options);
        module->load_state_dict(*inv.weights);
        check_shape(routing, {input.dim(0), options.num_experts()}, "routing_weights", "cond_conv");
        return [module, input, routing] {
          return Outputs{{"output", module->forward(input, routing)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
