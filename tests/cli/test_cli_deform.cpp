// End-to-end tests of `cvattn run deform_conv2d` and `cvattn run deform_conv` against the
// torchvision / mmcv fixtures of tests/fixtures/deform.py (docs/cli.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace fs = std::filesystem;
using test::pair_arg;
using ::testing::HasSubstr;
using Result = test::CliResult;

constexpr test::Tolerance kTol{1e-4, 1e-4};

class CliDeform : public test::CliTest {
 protected:
  // The --in and --set arguments of a deform/functional fixture.
  static std::string functional_args(const test::Fixture& fx) {
    const auto& p = fx.params();
    std::string args =
        " --in input=" + fx.path("input.npy") + " --in offset=" + fx.path("offset.npy") +
        " --in weight=" + fx.path("weight.npy") + " --set stride=" + pair_arg(p["stride"]) +
        " --set padding=" + pair_arg(p["padding"]) + " --set dilation=" + pair_arg(p["dilation"]);
    if (fx.has("bias")) args += " --in bias=" + fx.path("bias.npy");
    if (fx.has("mask")) args += " --in mask=" + fx.path("mask.npy");
    return args;
  }
};

TEST_F(CliDeform, DeformConv2dMatchesTorchvision) {
  const auto cases = test::fixtures_in("deform/functional");
  ASSERT_GE(cases.size(), 20u);
  for (const auto& fx : cases) {
    const Result r =
        run("run deform_conv2d" + functional_args(fx) + " --out output=" + path("out.npy"));
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), kTol) << fx.name();
  }
}

TEST_F(CliDeform, DeformConvMatchesMmcvWithMaps) {
  const auto cases = test::fixtures_in("deform/module");
  ASSERT_GE(cases.size(), 9u);
  for (const auto& fx : cases) {
    const auto& p = fx.params();
    const bool modulated = p["modulated"].get<bool>();
    std::string args = "run deform_conv --in input=" + fx.path("input.npy") + " --weights " +
                       fx.path("weights.safetensors") + " --set stride=" + pair_arg(p["stride"]) +
                       " --set padding=" + pair_arg(p["padding"]) +
                       " --set dilation=" + pair_arg(p["dilation"]) +
                       " --set deform_groups=" + std::to_string(p["deform_groups"].get<int>()) +
                       " --out output=" + path("out.npy") + " --out offset=" + path("offset.npy");
    if (modulated) args += " --out mask=" + path("mask.npy");
    const Result r = run(args);
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), kTol) << fx.name();
    EXPECT_TENSOR_NEAR(io::read_npy(path("offset.npy")), fx.tensor("offset"), kTol) << fx.name();
    if (modulated) {
      EXPECT_TENSOR_NEAR(io::read_npy(path("mask.npy")), fx.tensor("mask"), kTol) << fx.name();
    }
  }
}

TEST_F(CliDeform, ListAndHelpShowTheContract) {
  Result r = run("list");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("deform_conv2d\tinputs: input,offset,weight,bias?,mask?\t"
                               "outputs: output"));
  EXPECT_THAT(r.out,
              HasSubstr("deform_conv\tinputs: input,--weights\toutputs: output,offset,mask"));
  r = run("run deform_conv --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--set deform_groups=int"));
  EXPECT_THAT(r.out, HasSubstr("--weights FILE.safetensors (required)"));
}

TEST_F(CliDeform, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("deform/functional/basic_3x3_pad1_n2");
  const Result r = run("run deform_conv2d" + functional_args(fx) + " --repeat 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "deform_conv2d", 2);
}

TEST_F(CliDeform, MaskOfDcnV1IsAnInputError) {
  const auto fx = test::fixture("deform/module/dcn_v1_basic");
  const Result r =
      run("run deform_conv --in input=" + fx.path("input.npy") + " --weights " +
          fx.path("weights.safetensors") + " --set padding=1 --out output=" + path("out.npy") +
          " --out mask=" + path("mask.npy"));
  expect_input_error(r, "op 'deform_conv' produced no 'mask'");
  EXPECT_FALSE(fs::exists(path("out.npy")));
  EXPECT_FALSE(fs::exists(path("mask.npy")));
}

TEST_F(CliDeform, BadOffsetChannelsNameConvOffsetWeight) {
  StateDict sd;
  sd.set("weight", Tensor::zeros({4, 3, 3, 3}));
  sd.set("conv_offset.weight", Tensor::zeros({20, 3, 3, 3}));
  sd.set("conv_offset.bias", Tensor::zeros({20}));
  io::save_safetensors(path("bad.safetensors"), sd);
  const auto fx = test::fixture("deform/module/dcn_v1_dilation2");
  expect_input_error(run("run deform_conv --in input=" + fx.path("input.npy") + " --weights " +
                         path("bad.safetensors") + " --out output=" + path("out.npy")),
                     "'conv_offset.weight' [20, 3, 3, 3] has 20 output channels");
  // The right count for deform_groups=1 is wrong for deform_groups=2.
  expect_input_error(run("run deform_conv --in input=" + fx.path("input.npy") + " --weights " +
                         fx.path("weights.safetensors") + " --set deform_groups=2"),
                     "'conv_offset.weight' [18, 3, 3, 3] has 18 output channels");
  EXPECT_FALSE(fs::exists(path("out.npy")));
}

TEST_F(CliDeform, InputErrorsExitTwoAndWriteNothing) {
  const auto fx = test::fixture("deform/functional/basic_3x3_pad1_n2");
  const std::string out = " --out output=" + path("out.npy");
  // Offsets computed for padding 1 do not fit the output size of padding 0.
  expect_input_error(run("run deform_conv2d --in input=" + fx.path("input.npy") + " --in offset=" +
                         fx.path("offset.npy") + " --in weight=" + fx.path("weight.npy") + out),
                     "deform_conv2d: tensor 'offset' expected the output size (5, 7)");
  expect_input_error(run("run deform_conv2d --in input=" + fx.path("input.npy") +
                         " --in offset=" + fx.path("input.npy") +
                         " --in weight=" + fx.path("weight.npy") + " --set padding=1" + out),
                     "deform_conv2d: tensor 'offset' expected 2*offset_groups*kh*kw channels");
  expect_input_error(run("run deform_conv2d --in input=" + fx.path("input.npy") +
                         " --in weight=" + fx.path("weight.npy") + out),
                     "needs --in offset");
  expect_input_error(
      run("run deform_conv2d" + functional_args(fx) + " --in mask=" + fx.path("offset.npy") + out),
      "--in mask given twice");
  expect_input_error(run("run deform_conv --in input=" + fx.path("input.npy") + out),
                     "needs --weights");
  const auto mfx = test::fixture("deform/module/dcn_v2_basic");
  expect_input_error(run("run deform_conv --in input=" + fx.path("offset.npy") + " --weights " +
                         mfx.path("weights.safetensors") + " --set padding=1" + out),
                     "DeformConv2d::forward: tensor 'x' expected shape [*, 4, *, *]");
  EXPECT_FALSE(fs::exists(path("out.npy")));
}

}  // namespace
}  // namespace cvattn
