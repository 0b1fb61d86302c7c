#include "cvattn/functional/conv.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

namespace F = cvattn::functional;

OpSpec conv2d() {
  return {
      "conv2d",
      "torch.nn.functional.conv2d",
      {{"input", "[N,Ci,H,W]"}, {"weight", "[Co,Ci/groups,kh,kw]"}, {"bias", "[Co]", true}},
      false,
      {{"stride", SettingType::pair, "1", "stride (h,w)"},
       {"padding", SettingType::pair, "0", "zero padding (h,w)"},
       {"dilation", SettingType::pair, "1", "dilation (h,w)"},
       {"groups", SettingType::integer, "1", "channel groups"}},
      {{"output", "[N,Co,Ho,Wo]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const auto options = F::Conv2dOptions()
                                 .stride(s.pair("stride"))
                                 .padding(s.pair("padding"))
                                 .dilation(s.pair("dilation"))
                                 .groups(s.integer("groups"));
        const Tensor input = inv.input("input"), weight = inv.input("weight"),
                     bias = inv.input("bias");
        return [=] { return Outputs{{"output", F::conv2d(input, weight, bias, options)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
