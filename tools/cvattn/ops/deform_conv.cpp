#include "cvattn/modules/deform_conv.hpp"

#include <memory>

#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec deform_conv() {
  return {
      "deform_conv",
      "mmcv DeformConv2dPack (DCNv1) / ModulatedDeformConv2dPack (DCNv2)",
      {{"input", "[N,Ci,H,W]"}},
      true,
      {{"stride", SettingType::pair, "1", "stride (h,w)"},
       {"padding", SettingType::pair, "0", "zero padding (h,w)"},
       {"dilation", SettingType::pair, "1", "dilation (h,w)"},
       {"deform_groups", SettingType::integer, "1",
        "offset groups (not inferable from the weights)"}},
      {{"output", "[N,Co,Ho,Wo]"},
       {"offset", "[N,2*dg*kh*kw,Ho,Wo]"},
       {"mask", "[N,dg*kh*kw,Ho,Wo] (modulated only)"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const StateDict& sd = *inv.weights;
        const auto options = DeformConv2dOptions::from_state_dict(sd, s.integer("deform_groups"))
                                 .stride(s.pair("stride"))
                                 .padding(s.pair("padding"))
                                 .dilation(s.pair("dilation"));
        auto module = std::make_shared<DeformConv2d>(options);
        module->load_state_dict(sd);
        const Tensor input = inv.input("input");
        return [module, input] {
          const Attended r = module->forward_with_maps(input);
          Outputs out{{"output", r.output}};
          for (const auto& [name, map] : r.maps.items()) out.emplace(name, map);
          return out;
        };
      },
  };
}

}  // namespace cvattn::cli::ops
