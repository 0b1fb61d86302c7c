#include <memory>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

// timm SelectiveKernel. The paths' widths, the attention width and groups come from the weights
// (groups with the input's channel count); kernel_size, stride, dilation, split_input and
// keep_3x3 leave no trace there and come from --set.
OpSpec sk() {
  return {
      "sk",
      "timm SelectiveKernel",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"kernel_size", SettingType::int_list, "3,5",
        "one kernel size per path (a single k means k,k, as timm)"},
       {"stride", SettingType::integer, "1", "conv stride of every path"},
       {"dilation", SettingType::integer, "1", "module dilation"},
       {"split_input", SettingType::boolean, "true", "split the input channels across the paths"},
       {"keep_3x3", SettingType::boolean, "true",
        "3x3 kernels with dilation (k-1)/2 instead of k x k kernels"}},
      {{"output", "[N,C,Ho,Wo]"}, {"attention", "[N,paths,C]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        std::vector<std::int64_t> kernel_size = s.int_list("kernel_size");
        if (kernel_size.size() == 1) kernel_size.push_back(kernel_size[0]);
        const Tensor input = inv.input("input");
        check_rank(input, 4, "input", "sk");
        const auto options = SelectiveKernelOptions::from_state_dict(
            *inv.weights, kernel_size, s.integer("stride"), s.integer("dilation"),
            s.boolean("split_input"), s.boolean("keep_3x3"), input.dim(1));
        // Shared: the module is not copyable and the computation may be copied.
        auto module = std::make_shared<SelectiveKernel>(options);
        module->load_state_dict(*inv.weights);
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
