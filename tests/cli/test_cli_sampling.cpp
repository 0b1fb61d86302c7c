// End-to-end tests of `cvattn run affine_grid|grid_sample|grid_sample_backward|stn`
// (docs/cli.md) against the PyTorch fixtures in tests/fixtures/sampling and .../stn.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

class CliSampling : public test::CliTest {
 protected:
  // Fixtures of one op whose folder name starts with one of the prefixes.
  static std::vector<test::Fixture> cases(const std::string& op,
                                          const std::vector<std::string>& prefixes) {
    std::vector<test::Fixture> out;
    for (auto& fx : test::fixtures_in("sampling")) {
      if (fx.params().value("op", "") != op) continue;
      for (const auto& p : prefixes) {
        if (fx.name().rfind(p, 0) == 0) {
          out.push_back(fx);
          break;
        }
      }
    }
    return out;
  }
  static std::string grid_settings(const test::Fixture& fx) {
    const auto& p = fx.params();
    return " --set mode=" + p.at("mode").get<std::string>() +
           " --set padding_mode=" + p.at("padding_mode").get<std::string>() +
           " --set align_corners=" + test::bool_arg(p.at("align_corners"));
  }
  void expect_ok(const test::CliResult& r, const std::string& what) {
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
  }
};

TEST_F(CliSampling, AffineGridMatchesTorch) {
  const auto fxs = cases("affine_grid", {"affine_"});
  ASSERT_GE(fxs.size(), 10u);
  for (const auto& fx : fxs) {
    std::string size;
    for (const auto& d : fx.params().at("size")) {
      size += (size.empty() ? "" : ",") + std::to_string(d.get<long long>());
    }
    const auto r =
        run("run affine_grid --in theta=" + fx.path("theta.npy") + " --set size=" + size +
            " --set align_corners=" + test::bool_arg(fx.params().at("align_corners")) +
            " --out output=" + path("output.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(CliSampling, GridSampleMatchesTorch) {
  const auto fxs = cases("grid_sample", {"fwd_random_", "fwd_size1x7_"});
  ASSERT_GE(fxs.size(), 36u);
  for (const auto& fx : fxs) {
    const auto r = run("run grid_sample --in input=" + fx.path("input.npy") +
                       " --in grid=" + fx.path("grid.npy") + grid_settings(fx) +
                       " --out output=" + path("output.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(CliSampling, GridSampleBackwardMatchesTorch) {
  const auto fxs = cases("grid_sample_backward", {"bwd_random_", "bwd_single_"});
  ASSERT_GE(fxs.size(), 36u);
  for (const auto& fx : fxs) {
    const auto r =
        run("run grid_sample_backward --in input=" + fx.path("input.npy") +
            " --in grid=" + fx.path("grid.npy") +
            " --in grad_output=" + fx.path("grad_output.npy") + grid_settings(fx) +
            " --out grad_input=" + path("gi.npy") + " --out grad_grid=" + path("gg.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("gi.npy")), fx.tensor("grad_input"), test::Tolerance{})
        << fx.name();
    EXPECT_TENSOR_NEAR(io::read_npy(path("gg.npy")), fx.tensor("grad_grid"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(CliSampling, AffineGridInputErrors) {
  const auto fx = test::fixture("sampling/affine_2x1x2x3_ac0");
  const std::string theta = " --in theta=" + fx.path("theta.npy");
  const std::string out = " --out output=" + path("o.npy");
  expect_input_error(run("run affine_grid" + theta + out), "size");
  // Batch of size (3) disagrees with theta's batch (2).
  expect_input_error(run("run affine_grid" + theta + " --set size=3,1,2,3" + out), "theta");
  expect_input_error(run("run affine_grid" + theta + " --set size=2,1,x,3" + out), "size");
  expect_input_error(
      run("run affine_grid" + theta + " --set size=2,1,2,3 --set align_corners=maybe" + out),
      "align_corners");
  EXPECT_TRUE(no_temporary_files());
}

TEST_F(CliSampling, GridSampleInputErrors) {
  const auto fx = test::fixture("sampling/fwd_random_bilinear_zeros_ac0");
  const std::string ins =
      " --in input=" + fx.path("input.npy") + " --in grid=" + fx.path("grid.npy");
  const std::string out = " --out output=" + path("o.npy");
  expect_input_error(run("run grid_sample" + ins + " --set mode=linear" + out),
                     "setting mode='linear' is not one of bilinear, nearest, bicubic");
  expect_input_error(run("run grid_sample" + ins + " --set padding_mode=wrap" + out),
                     "setting padding_mode='wrap' is not one of zeros, border, reflection");
  // The grid given as the input and vice versa: shapes disagree.
  expect_input_error(run("run grid_sample --in input=" + fx.path("grid.npy") +
                         " --in grid=" + fx.path("input.npy") + out),
                     "grid_sample");
  expect_input_error(run("run grid_sample --in input=" + fx.path("input.npy") + out), "grid");
}

TEST_F(CliSampling, GridSampleBackwardInputErrors) {
  const auto fx = test::fixture("sampling/bwd_random_bilinear_zeros_ac0");
  const std::string ins =
      " --in input=" + fx.path("input.npy") + " --in grid=" + fx.path("grid.npy");
  const std::string outs =
      " --out grad_input=" + path("gi.npy") + " --out grad_grid=" + path("gg.npy");
  expect_input_error(run("run grid_sample_backward" + ins + " --in grad_output=" +
                         fx.path("grad_output.npy") + " --set mode=area" + outs),
                     "setting mode='area' is not one of");
  // grad_output must have the output's shape; the input is not that.
  expect_input_error(
      run("run grid_sample_backward" + ins + " --in grad_output=" + fx.path("input.npy") + outs),
      "grad_output");
}

TEST_F(CliSampling, StnWholeNetMatchesTutorial) {
  for (const char* name : {"stn/net_n3_28_ac0", "stn/identity_n2_28"}) {
    const auto fx = test::fixture(name);
    std::string args = "run stn --in input=" + fx.path("input.npy") + " --weights " +
                       fx.path("weights.safetensors");
    for (const char* o : {"output", "theta", "grid", "logits"}) {
      args += std::string(" --out ") + o + "=" + path(std::string(o) + ".npy");
    }
    expect_ok(run(args), name);
    for (const char* o : {"output", "theta", "grid", "logits"}) {
      EXPECT_TENSOR_NEAR(io::read_npy(path(std::string(o) + ".npy")), fx.tensor(o),
                         test::Tolerance{})
          << name << " " << o;
    }
  }
}

TEST_F(CliSampling, StnOnlyWeightsMatchTutorial) {
  // 27 x 27 input: the transformer alone accepts 26..29.
  const auto fx = test::fixture("stn/stn_n2_27_ac0");
  const auto r = run("run stn --in input=" + fx.path("input.npy") + " --weights " +
                     fx.path("weights.safetensors") + " --out output=" + path("o.npy") +
                     " --out theta=" + path("t.npy") + " --out grid=" + path("g.npy"));
  expect_ok(r, fx.name());
  EXPECT_TENSOR_NEAR(io::read_npy(path("o.npy")), fx.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(io::read_npy(path("t.npy")), fx.tensor("theta"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(io::read_npy(path("g.npy")), fx.tensor("grid"), test::Tolerance{});
}

TEST_F(CliSampling, StnInputErrors) {
  const auto stn_only = test::fixture("stn/stn_n2_27_ac0");
  const auto net = test::fixture("stn/net_n3_28_ac0");
  // logits need the classifier keys.
  expect_input_error(run("run stn --in input=" + stn_only.path("input.npy") + " --weights " +
                         stn_only.path("weights.safetensors") + " --out logits=" + path("l.npy")),
                     "logits");
  // The whole Net cannot classify a 27 x 27 image.
  expect_input_error(run("run stn --in input=" + stn_only.path("input.npy") + " --weights " +
                         net.path("weights.safetensors") + " --out output=" + path("o.npy")),
                     "must have H and W in 28..29");
  // A theta is no image.
  expect_input_error(run("run stn --in input=" + net.path("theta.npy") + " --weights " +
                         net.path("weights.safetensors") + " --out output=" + path("o.npy")),
                     "input");
  // Weights are required, and a truncated Net is reported.
  expect_input_error(
      run("run stn --in input=" + net.path("input.npy") + " --out output=" + path("o.npy")),
      "weights");
  StateDict d = io::load_safetensors(net.path("weights.safetensors"));
  d.erase("fc2.bias");
  io::save_safetensors(path("cut.safetensors"), d);
  expect_input_error(run("run stn --in input=" + net.path("input.npy") + " --weights " +
                         path("cut.safetensors") + " --out output=" + path("o.npy")),
                     "fc2.bias");
  EXPECT_TRUE(no_temporary_files());
}

}  // namespace
}  // namespace cvattn
