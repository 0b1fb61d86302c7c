// End-to-end tests of `cvattn run se|eca|cbam` (docs/cli.md) against the timm fixtures
// in tests/fixtures/channel (the cases whose hyper-parameters are all in the weights).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;

class CliChannel : public test::CliTest {
 protected:
  // Runs `op` on a fixture, asking for every output, and compares each with the reference.
  void expect_matches(const std::string& op, const test::Fixture& fx,
                      const std::vector<std::string>& maps) {
    std::string args = "run " + op + " --in input=" + fx.path("input.npy") + " --weights " +
                       fx.path("weights.safetensors") + " --out output=" + path("output.npy");
    for (const auto& m : maps) args += " --out " + m + "=" + path(m + ".npy");
    const test::CliResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
    for (const auto& m : maps) {
      EXPECT_TENSOR_NEAR(io::read_npy(path(m + ".npy")), fx.tensor(m), test::Tolerance{})
          << fx.name() << " " << m;
    }
  }
  // Fixtures of one module whose settings the CLI can infer from the weights.
  static std::vector<test::Fixture> cli_cases(const std::string& prefix) {
    std::vector<test::Fixture> out;
    for (auto& fx : test::fixtures_in("channel", prefix)) {
      if (fx.params().value("cli", false)) out.push_back(fx);
    }
    return out;
  }
};

TEST_F(CliChannel, SeMatchesTimm) {
  const auto cases = cli_cases("se_");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& fx : cases) expect_matches("se", fx, {"attention"});
}

TEST_F(CliChannel, EcaMatchesTimm) {
  const auto cases = cli_cases("eca_");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& fx : cases) expect_matches("eca", fx, {"attention"});
}

TEST_F(CliChannel, CbamMatchesTimm) {
  const auto cases = cli_cases("cbam_");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& fx : cases) {
    expect_matches("cbam", fx, {"channel_attention", "spatial_attention"});
  }
}

TEST_F(CliChannel, WritesOnlyTheRequestedOutputs) {
  const auto fx = test::fixture("channel/cbam_c64_default");
  const test::CliResult r = run("run cbam --in input=" + fx.path("input.npy") + " --weights " +
                                fx.path("weights.safetensors") +
                                " --out spatial_attention=" + path("s.npy") + " --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TENSOR_NEAR(io::read_npy(path("s.npy")), fx.tensor("spatial_attention"),
                     test::Tolerance{});
  EXPECT_FALSE(std::filesystem::exists(path("output.npy")));
  EXPECT_TRUE(no_temporary_files());
}

TEST_F(CliChannel, ListHelpAndRepeat) {
  test::CliResult r = run("list");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out,
              HasSubstr("se\tinputs: input,--weights\toutputs: output,attention\tsettings: -"));
  EXPECT_THAT(r.out,
              HasSubstr("eca\tinputs: input,--weights\toutputs: output,attention\tsettings: -"));
  EXPECT_THAT(r.out, HasSubstr("cbam\tinputs: input,--weights\toutputs: output,channel_attention,"
                               "spatial_attention\tsettings: -"));
  r = run("run cbam --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--weights FILE.safetensors (required)"));
  EXPECT_THAT(r.out, HasSubstr("--out spatial_attention=FILE.npy  [N,1,H,W]"));
  const auto fx = test::fixture("channel/se_c64_default");
  r = run("run se --in input=" + fx.path("input.npy") + " --weights " +
          fx.path("weights.safetensors") + " --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "se", 3);
}

TEST_F(CliChannel, UsageErrors) {
  const auto fx = test::fixture("channel/se_c64_default");
  const std::string in = " --in input=" + fx.path("input.npy");
  const std::string w = " --weights " + fx.path("weights.safetensors");
  expect_input_error(run("run se" + in), "op 'se' needs --weights FILE.safetensors");
  expect_input_error(run("run se" + in + w + " --set add_maxpool=true"),
                     "op 'se' has no setting 'add_maxpool' (settings: none)");
  expect_input_error(run("run eca" + in + w + " --out channel_attention=x.npy"),
                     "op 'eca' has no output 'channel_attention' (outputs: output, attention)");
  expect_input_error(run("run cbam" + w), "op 'cbam' needs --in input=FILE.npy");
}

TEST_F(CliChannel, InputErrorsNameTheKeyAndWriteNothing) {
  const auto se = test::fixture("channel/se_c64_default");
  const auto cbam = test::fixture("channel/cbam_c64_default");
  const auto eca = test::fixture("channel/eca_c64_k3");
  const std::string out = " --out output=" + path("out.npy");
  // Wrong channel count: a C=24 input for C=64 weights.
  expect_input_error(
      run("run se --in input=" + test::fixture("channel/se_c24_nobias").path("input.npy") +
          " --weights " + se.path("weights.safetensors") + out),
      "se: tensor 'input' expected shape [*, 64, *, *], got [3, 24, 5, 9]");
  // Weights of another module.
  expect_input_error(run("run se --in input=" + se.path("input.npy") + " --weights " +
                         cbam.path("weights.safetensors") + out),
                     "SqueezeExcitationOptions::from_state_dict: missing 'fc1.weight'");
  expect_input_error(run("run cbam --in input=" + cbam.path("input.npy") + " --weights " +
                         se.path("weights.safetensors") + out),
                     "CbamOptions::from_state_dict: missing 'channel.fc1.weight'");
  // A missing key, an unexpected key and a shape that disagrees, each named with its shapes.
  expect_input_error(run("run se --in input=" + se.path("input.npy") + " --weights " +
                         edited_weights(se, "fc2.bias") + out),
                     "missing 'fc2.bias'");
  expect_input_error(run("run se --in input=" + se.path("input.npy") + " --weights " +
                         edited_weights(se, "", "fc3.weight", Tensor::zeros({2})) + out),
                     "unexpected 'fc3.weight'");
  expect_input_error(run("run se --in input=" + se.path("input.npy") + " --weights " +
                         edited_weights(se, "", "fc2.weight", Tensor::zeros({64, 9, 1, 1})) + out),
                     "'fc2.weight' expected [64, 8, 1, 1], got [64, 9, 1, 1]");
  expect_input_error(
      run("run cbam --in input=" + cbam.path("input.npy") + " --weights " +
          edited_weights(cbam, "", "spatial.conv.conv.weight", Tensor::zeros({1, 2, 6, 6})) + out),
      "spatial_kernel_size must be odd");
  expect_input_error(run("run eca --in input=" + eca.path("input.npy") + " --weights " +
                         edited_weights(eca, "", "conv.weight", Tensor::zeros({1, 1, 4})) + out),
                     "kernel_size must be odd");
  expect_input_error(run("run eca --in input=" + eca.path("input.npy") + " --weights " +
                         edited_weights(eca, "", "conv.weight", Tensor::zeros({3})) + out),
                     "'conv.weight' expected [1, 1, *], got [3]");
  // Malformed files.
  const std::string truncated =
      write("trunc.safetensors", test::slurp(se.path("weights.safetensors")).substr(0, 40));
  expect_input_error(
      run("run se --in input=" + se.path("input.npy") + " --weights " + truncated + out),
      "--weights: ");
  expect_input_error(run("run cbam --in input=" + write("x.npy", "garbage") + " --weights " +
                         cbam.path("weights.safetensors") + out),
                     "--in input: ");
  expect_input_error(run("run cbam --in input=" + se.path("attention.npy") + " --weights " +
                         cbam.path("weights.safetensors") + out),
                     "cbam: tensor 'input' expected shape [*, 64, *, *], got [2, 64]");
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
  EXPECT_TRUE(no_temporary_files());
}

TEST_F(CliChannel, EmptySpatialInputIsAnInputError) {
  const auto fx = test::fixture("channel/eca_c64_k3");
  const std::string empty = path("empty.npy");
  io::write_npy(empty, Tensor::zeros({1, 64, 0, 3}));
  expect_input_error(run("run eca --in input=" + empty + " --weights " +
                         fx.path("weights.safetensors") + " --out output=" + path("o.npy")),
                     "expected H, W >= 1");
}

}  // namespace
}  // namespace cvattn
