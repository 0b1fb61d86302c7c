// layer_norm, group_norm, the activations and interpolate (docs/cli.md, "Operations added in the
// second round", functional table) over the functional kernels.
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/interpolate.hpp"
#include "cvattn/functional/normalization.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

namespace F = cvattn::functional;

namespace {

// An op with one `input` and one `output` computed by fn.
OpSpec unary(const char* name, const char* mirrors, Tensor (*fn)(const Tensor&)) {
  return {
      name,
      mirrors,
      {{"input", "[...]"}},
      false,
      {},
      {{"output", "[...] (as input)"}},
      [fn](const Invocation& inv) -> Computation {
        const Tensor input = inv.input("input");
        return [=] { return Outputs{{"output", fn(input)}}; };
      },
  };
}

// "1.7" (both) or "1.7,0.6" (h, w).
F::Scale2 parse_scale_factor(const std::string& text) {
  std::vector<double> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = text.find(',', start);
    const std::string p = text.substr(start, pos - start);
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(p.c_str(), &end);
    CVATTN_CHECK(!p.empty() && errno == 0 && end == p.c_str() + p.size(), ValueError,
                 "op 'interpolate': setting scale_factor='", text,
                 "' is not a number or a pair of numbers h,w");
    parts.push_back(v);
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  CVATTN_CHECK(parts.size() <= 2, ValueError, "op 'interpolate': setting scale_factor='", text,
               "' has more than two numbers");
  return parts.size() == 1 ? F::Scale2(parts[0]) : F::Scale2(parts[0], parts[1]);
}

}  // namespace

OpSpec layer_norm() {
  return {
      "layer_norm",
      "torch.nn.functional.layer_norm",
      {{"input", "[...,D...]"}, {"weight", "[D...]", true}, {"bias", "[D...]", true}},
      false,
      {{"normalized_shape",
        SettingType::shape,
        "",
        "the trailing dims normalised over (default: the shape of weight)",
        {},
        true},
       {"eps", SettingType::real, "1e-5", "added to the variance"}},
      {{"output", "[...,D...]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const Tensor input = inv.input("input"), weight = inv.input("weight"),
                     bias = inv.input("bias");
        Shape shape;
        if (s.has("normalized_shape")) {
          shape = s.shape("normalized_shape");
          CVATTN_CHECK(!weight.defined() || weight.shape() == shape, ValueError,
                       "op 'layer_norm': setting normalized_shape=", to_string(shape),
                       " contradicts tensor 'weight' ", to_string(weight.shape()));
        } else if (weight.defined()) {
          shape = weight.shape();
        } else if (bias.defined()) {
          shape = bias.shape();
        } else {
          throw ValueError(
              "op 'layer_norm' needs --set normalized_shape=... when no --in weight is given");
        }
        const double eps = s.real("eps");
        return [=] { return Outputs{{"output", F::layer_norm(input, shape, weight, bias, eps)}}; };
      },
  };
}

OpSpec group_norm() {
  return {
      "group_norm",
      "torch.nn.functional.group_norm",
      {{"input", "[N,C,...]"}, {"weight", "[C]", true}, {"bias", "[C]", true}},
      false,
      {{"num_groups", SettingType::integer, "", "groups the channels are divided into"},
       {"eps", SettingType::real, "1e-5", "added to the variance"}},
      {{"output", "[N,C,...]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const Tensor input = inv.input("input"), weight = inv.input("weight"),
                     bias = inv.input("bias");
        const std::int64_t groups = s.integer("num_groups");
        const double eps = s.real("eps");
        return [=] { return Outputs{{"output", F::group_norm(input, groups, weight, bias, eps)}}; };
      },
  };
}

OpSpec gelu() {
  return {
      "gelu",
      "torch.nn.functional.gelu",
      {{"input", "[...]"}},
      false,
      {{"approximate", SettingType::word, "none", "none (erf) or tanh", {"none", "tanh"}}},
      {{"output", "[...] (as input)"}},
      [](const Invocation& inv) -> Computation {
        const GeluApproximate approximate =
            parse_gelu_approximate(inv.settings.word("approximate"));
        const Tensor input = inv.input("input");
        return [=] { return Outputs{{"output", F::gelu(input, approximate)}}; };
      },
  };
}

OpSpec silu() { return unary("silu", "torch.nn.functional.silu", &F::silu); }
OpSpec hardswish() { return unary("hardswish", "torch.nn.functional.hardswish", &F::hardswish); }
OpSpec hardsigmoid() {
  return unary("hardsigmoid", "torch.nn.functional.hardsigmoid", &F::hardsigmoid);
}
OpSpec mish() { return unary("mish", "torch.nn.functional.mish", &F::mish); }

OpSpec interpolate() {
  return {
      "interpolate",
      "torch.nn.functional.interpolate",
      {{"input", "[N,C,H,W]"}},
      false,
      {{"size", SettingType::pair, "", "output size h,w (or scale_factor)", {}, true},
       {"scale_factor",
        SettingType::word,
        "",
        "multiplier for H and W: s or sh,sw (or size)",
        {},
        true},
       {"mode", SettingType::word, "nearest", "interpolation", {"nearest", "bilinear", "bicubic"}},
       {"align_corners",
        SettingType::boolean,
        "",
        "corner pixel centres are aligned (default false; bilinear/bicubic only)",
        {},
        true}},
      {{"output", "[N,C,Ho,Wo]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        CVATTN_CHECK(!(s.has("size") && s.has("scale_factor")), ValueError,
                     "op 'interpolate': give only one of --set size and --set scale_factor");
        CVATTN_CHECK(s.has("size") || s.has("scale_factor"), ValueError,
                     "op 'interpolate' needs --set size=h,w or --set scale_factor=...");
        const F::Interpolation mode = F::parse_interpolation(s.word("mode"));
        CVATTN_CHECK(!(s.has("align_corners") && mode == F::Interpolation::nearest), ValueError,
                     "op 'interpolate': setting align_corners applies to modes bilinear and "
                     "bicubic only, not nearest");
        F::InterpolateOptions options;
        options.mode(mode).align_corners(s.has("align_corners") && s.boolean("align_corners"));
        if (s.has("size")) {
          options.size(s.pair("size"));
        } else {
          options.scale_factor(parse_scale_factor(s.word("scale_factor")));
        }
        const Tensor input = inv.input("input");
        return [=] { return Outputs{{"output", F::interpolate(input, options)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
