// affine_grid, grid_sample and grid_sample_backward (docs/modules.md §7-8) over the functional
// kernels; 5-D input / 3-D theta run the volumetric forms (functional/sampling3d.hpp).
#include "cvattn/functional/sampling.hpp"

#include "ops/ops.hpp"

namespace cvattn::cli::ops {

namespace F = cvattn::functional;

namespace {

// The grid_sample settings shared by the forward and backward ops.
std::vector<SettingSpec> grid_sample_settings() {
  return {
      {"mode", SettingType::word, "bilinear", "interpolation", {"bilinear", "nearest", "bicubic"}},
      {"padding_mode",
       SettingType::word,
       "zeros",
       "what samples outside the input read",
       {"zeros", "border", "reflection"}},
      {"align_corners", SettingType::boolean, "false", "-1/+1 name the corner pixel centres"}};
}

F::GridSampleOptions grid_sample_options(const Settings& s) {
  return F::GridSampleOptions()
      .mode(F::parse_interpolation(s.word("mode")))
      .padding_mode(F::parse_padding_mode(s.word("padding_mode")))
      .align_corners(s.boolean("align_corners"));
}

}  // namespace

OpSpec affine_grid() {
  return {
      "affine_grid",
      "torch.nn.functional.affine_grid",
      {{"theta", "[N,2,3] or [N,3,4]"}},
      false,
      {{"size", SettingType::shape, "", "output size N,C,H,W (or N,C,D,H,W)"},
       {"align_corners", SettingType::boolean, "false", "-1/+1 name the corner pixel centres"}},
      {{"output", "[N,H,W,2] or [N,D,H,W,3]"}},
      [](const Invocation& inv) -> Computation {
        const Shape size = inv.settings.shape("size");
        const bool align_corners = inv.settings.boolean("align_corners");
        const Tensor theta = inv.input("theta");
        return [=] { return Outputs{{"output", F::affine_grid(theta, size, align_corners)}}; };
      },
  };
}

OpSpec grid_sample() {
  return {
      "grid_sample",
      "torch.nn.functional.grid_sample",
      {{"input", "[N,C,H,W] or [N,C,D,H,W]"}, {"grid", "[N,Ho,Wo,2] or [N,Do,Ho,Wo,3]"}},
      false,
      grid_sample_settings(),
      {{"output", "[N,C,Ho,Wo] or [N,C,Do,Ho,Wo]"}},
      [](const Invocation& inv) -> Computation {
        const auto options = grid_sample_options(inv.settings);
        const Tensor input = inv.input("input"), grid = inv.input("grid");
        return [=] { return Outputs{{"output", F::grid_sample(input, grid, options)}}; };
      },
  };
}

OpSpec grid_sample_backward() {
  return {
      "grid_sample_backward",
      "autograd of torch.nn.functional.grid_sample",
      {{"input", "[N,C,H,W] or 5-D"},
       {"grid", "[N,Ho,Wo,2] or [N,Do,Ho,Wo,3]"},
       {"grad_output", "the output's shape"}},
      false,
      grid_sample_settings(),
      {{"grad_input", "input's shape"}, {"grad_grid", "grid's shape"}},
      [](const Invocation& inv) -> Computation {
        const auto options = grid_sample_options(inv.settings);
        const Tensor input = inv.input("input"), grid = inv.input("grid"),
                     grad_output = inv.input("grad_output");
        return [=] {
          F::GridSampleGrads g = F::grid_sample_backward(input, grid, grad_output, options);
          return Outputs{{"grad_input", g.grad_input}, {"grad_grid", g.grad_grid}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
