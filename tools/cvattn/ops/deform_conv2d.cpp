#include "cvattn/functional/deform_conv.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

namespace F = cvattn::functional;

OpSpec deform_conv2d() {
  return {
      "deform_conv2d",
      "torchvision.ops.deform_conv2d",
      {{"input", "[N,Ci,H,W]"},
       {"offset", "[N,2*og*kh*kw,Ho,Wo]"},
       {"weight", "[Co,Ci/groups,kh,kw]"},
       {"bias", "[Co]", true},
       {"mask", "[N,og*kh*kw,Ho,Wo]", true}},
      false,
      {{"stride", SettingType::pair, "1", "stride (h,w)"},
       {"padding", SettingType::pair, "0", "zero padding (h,w)"},
       {"dilation", SettingType::pair, "1", "dilation (h,w)"}},
      {{"output", "[N,Co,Ho,Wo]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const auto options = F::DeformConv2dOptions()
                                 .stride(s.pair("stride"))
                                 .padding(s.pair("padding"))
                                 .dilation(s.pair("dilation"));
        const Tensor input = inv.input("input"), offset = inv.input("offset"),
                     weight = inv.input("weight"), bias = inv.input("bias"),
                     mask = inv.input("mask");
        return [=] {
          return Outputs{{"output", F::deform_conv2d(input, offset, weight, bias, mask, options)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
