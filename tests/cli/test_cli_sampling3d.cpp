// `cvattn run grid_sample|grid_sample_backward|affine_grid` on volumetric data (docs/cli.md, second
// round: 5-D input with [N,Do,Ho,Wo,3] grids, [N,3,4] theta with size N,C,D,H,W) against the
// PyTorch fixtures of tests/fixtures/sampling3d.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

class CliSampling3d : public test::CliTest {
 protected:
  static std::string grid_settings(const test::Fixture& fx) {
    const auto& p = fx.params();
    return " --set mode=" + p.at("mode").get<std::string>() +
           " --set padding_mode=" + p.at("padding_mode").get<std::string>() +
           " --set align_corners=" + test::bool_arg(p.at("align_corners"));
  }
  void expect_ok(const test::CliResult& r, const std::string& what) {
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    EXPECT_EQ(r.err, "");
  }
};

TEST_F(CliSampling3d, GridSampleForwardAndBackwardMatchTorch) {
  int forward = 0, backward = 0;
  for (const auto& fx : test::fixtures_in("sampling3d")) {
    SCOPED_TRACE(fx.name());
    const std::string op = fx.params().at("op");
    if (op == "grid_sample" && fx.name().rfind("fwd_random_", 0) == 0) {
      const auto r = run("run grid_sample --in input=" + fx.path("input.npy") +
                         " --in grid=" + fx.path("grid.npy") + grid_settings(fx) +
                         " --out output=" + path("output.npy"));
      expect_ok(r, fx.name());
      EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{});
      ++forward;
    } else if (op == "grid_sample_backward" && fx.name().rfind("bwd_random_", 0) == 0) {
      const auto r =
          run("run grid_sample_backward --in input=" + fx.path("input.npy") +
              " --in grid=" + fx.path("grid.npy") +
              " --in grad_output=" + fx.path("grad_output.npy") + grid_settings(fx) +
              " --out grad_input=" + path("gi.npy") + " --out grad_grid=" + path("gg.npy"));
      expect_ok(r, fx.name());
      EXPECT_TENSOR_NEAR(io::read_npy(path("gi.npy")), fx.tensor("grad_input"), test::Tolerance{});
      EXPECT_TENSOR_NEAR(io::read_npy(path("gg.npy")), fx.tensor("grad_grid"), test::Tolerance{});
      ++backward;
    }
  }
  EXPECT_EQ(forward, 12);  // 2 modes x 3 paddings x 2 align_corners
  EXPECT_EQ(backward, 12);
}

TEST_F(CliSampling3d, AffineGrid3dMatchesTorch) {
  int count = 0;
  for (const auto& fx : test::fixtures_in("sampling3d", "affine_")) {
    if (fx.params().at("op") != "affine_grid") continue;
    SCOPED_TRACE(fx.name());
    std::string size;
    for (const auto& d : fx.params().at("size")) {
      size += (size.empty() ? "" : ",") + std::to_string(d.get<long long>());
    }
    const auto r =
        run("run affine_grid --in theta=" + fx.path("theta.npy") + " --set size=" + size +
            " --set align_corners=" + test::bool_arg(fx.params().at("align_corners")) +
            " --out output=" + path("output.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{});
    ++count;
  }
  EXPECT_EQ(count, 10);
}

TEST_F(CliSampling3d, VolumetricInputErrors) {
  const auto fx = test::fixture("sampling3d/fwd_random_bilinear_zeros_ac0");
  const std::string ins =
      " --in input=" + fx.path("input.npy") + " --in grid=" + fx.path("grid.npy");
  const std::string out = " --out output=" + path("o.npy");
  expect_input_error(run("run grid_sample" + ins + " --set mode=bicubic" + out),
                     "mode 'bicubic' supports 4-D input only");
  // A 4-D grid with 5-D input.
  const auto fx2 = test::fixture("sampling/fwd_random_bilinear_zeros_ac0");
  expect_input_error(run("run grid_sample --in input=" + fx.path("input.npy") +
                         " --in grid=" + fx2.path("grid.npy") + out),
                     "grid_sample: tensor 'grid' expected rank 5");
  // 2-D theta with a 5-entry size.
  const auto af = test::fixture("sampling/affine_2x1x2x3_ac0");
  expect_input_error(
      run("run affine_grid --in theta=" + af.path("theta.npy") + " --set size=2,1,2,3,4" + out),
      "theta' expected [2, 3, 4]");
  EXPECT_TRUE(no_temporary_files());
}

}  // namespace
}  // namespace cvattn
