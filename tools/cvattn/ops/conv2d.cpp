#include <memory>

#include "cvattn/core/error.hpp"
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
        // The kernel's Winograd transforms prepared once, as a loaded model has them (ONNX
        // Runtime and ncnn transform at load too); the values equal the plain call's. A weight
        // Conv2dWeight rejects is left to conv2d, whose error names the op.
        std::shared_ptr<const F::Conv2dWeight> prepared;
        try {
          prepared = std::make_shared<const F::Conv2dWeight>(weight, options);
        } catch (const Error&) {
          return [=] { return Outputs{{"output", F::conv2d(input, weight, bias, options)}}; };
        }
        return [=] { return Outputs{{"output", F::conv2d(input, *prepared, bias)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
