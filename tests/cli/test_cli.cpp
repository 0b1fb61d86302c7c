// End-to-end tests of the cvattn tool against docs/cli.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cvattn/io/npy.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace fs = std::filesystem;
using test::pair_arg;
using test::slurp;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Result = test::CliResult;
using Cli = test::CliTest;

TEST_F(Cli, Conv2dMatchesTorch) {
  const auto cases = test::fixtures_in("cli");
  ASSERT_GE(cases.size(), 8u);
  for (const auto& fx : cases) {
    const auto& p = fx.params();
    std::string args =
        "run conv2d --in input=" + fx.path("input.npy") + " --in weight=" + fx.path("weight.npy") +
        " --set stride=" + pair_arg(p["stride"]) + " --set padding=" + pair_arg(p["padding"]) +
        " --set dilation=" + pair_arg(p["dilation"]) +
        " --set groups=" + std::to_string(p["groups"].get<int>()) +
        " --out output=" + path("out.npy");
    if (fx.has("bias")) args += " --in bias=" + fx.path("bias.npy");
    const Result r = run(args);
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(Cli, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("cli/conv2d_0");
  const Result r = run("run conv2d --in input=" + fx.path("input.npy") +
                       " --in=weight=" + fx.path("weight.npy") +
                       " --set groups=" + std::to_string(fx.params()["groups"].get<int>()) +
                       " --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "conv2d", 3);
}

TEST_F(Cli, ListInfoAndHelp) {
  Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("conv2d\tinputs: input,weight,bias?\toutputs: output"));
  r = run("info");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("OpenCV 4."));
  EXPECT_THAT(r.out, HasSubstr("Eigen 3."));
  EXPECT_THAT(r.out, HasSubstr("OpenMP threads"));
  EXPECT_THAT(r.out, HasSubstr("SIMD"));
  for (const char* h : {"--help", "run --help", "run conv2d --help"}) {
    r = run(h);
    EXPECT_EQ(r.exit_code, 0) << h;
    EXPECT_THAT(r.out, HasSubstr("cvattn run")) << h;
  }
  r = run("run conv2d --help");
  EXPECT_THAT(r.out, HasSubstr("--set groups=int"));
}

TEST_F(Cli, UsageErrorsExitTwoWithOneLine) {
  const auto fx = test::fixture("cli/conv2d_0");
  const std::string in =
      " --in input=" + fx.path("input.npy") + " --in weight=" + fx.path("weight.npy");
  expect_input_error(run(""), "");
  expect_input_error(run("frobnicate"), "unknown command 'frobnicate'");
  expect_input_error(run("run nosuchop"), "unknown op 'nosuchop'");
  expect_input_error(run("run conv2d" + in + " --set gropus=2"), "no setting 'gropus'");
  expect_input_error(run("run conv2d" + in + " --set groups=two"),
                     "groups='two' is not an integer");
  expect_input_error(run("run conv2d" + in + " --set stride=1,2,3"), "integer pair");
  expect_input_error(run("run conv2d --in input=" + fx.path("input.npy")), "needs --in weight");
  expect_input_error(run("run conv2d" + in + " --in query=x.npy"), "no input 'query'");
  expect_input_error(run("run conv2d" + in + " --out attention=x.npy"), "no output 'attention'");
  expect_input_error(run("run conv2d" + in + " --repeat 0"), "--repeat expects a positive integer");
  expect_input_error(run("run conv2d" + in + " --threads -1"),
                     "--threads expects a positive integer");
  expect_input_error(run("run conv2d" + in + " --bogus 1"), "unknown option '--bogus'");
  expect_input_error(run("run conv2d" + in + " --in weight=y.npy"), "--in weight given twice");
  expect_input_error(run("run conv2d" + in + " --weights w.safetensors"), "takes no --weights");
  expect_input_error(run("run conv2d" + in + " --set"), "--set needs a value");
  expect_input_error(run("run conv2d" + in + " --set groups"), "expects NAME=VALUE");
}

TEST_F(Cli, InputErrorsNameTheFileAndWriteNothing) {
  const auto fx = test::fixture("cli/conv2d_1");
  const std::string out = " --out output=" + path("out.npy");
  expect_input_error(run("run conv2d --in input=" + path("missing.npy") +
                         " --in weight=" + fx.path("weight.npy") + out),
                     "--in input: cannot open '" + path("missing.npy") + "'");
  const std::string junk = write("junk.npy", "this is not numpy");
  expect_input_error(
      run("run conv2d --in input=" + junk + " --in weight=" + fx.path("weight.npy") + out),
      "bad magic");
  const std::string whole = slurp(fx.path("input.npy"));
  const std::string truncated = write("trunc.npy", whole.substr(0, whole.size() - 4));
  expect_input_error(
      run("run conv2d --in input=" + truncated + " --in weight=" + fx.path("weight.npy") + out),
      "data bytes");
  // Shape mismatch: weight's input channels disagree with the input's (groups=5 cannot divide).
  expect_input_error(run("run conv2d --in input=" + fx.path("input.npy") +
                         " --in weight=" + fx.path("weight.npy") + " --set groups=5" + out),
                     "conv2d");
  EXPECT_FALSE(fs::exists(path("out.npy")));
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  }
}

TEST_F(Cli, UnwritableOutputIsAnErrorWithoutPartialFiles) {
  const auto fx = test::fixture("cli/conv2d_0");
  const Result r = run("run conv2d --in input=" + fx.path("input.npy") +
                       " --in weight=" + fx.path("weight.npy") +
                       " --set groups=" + std::to_string(fx.params()["groups"].get<int>()) +
                       " --out output=/nonexistent/dir/out.npy");
  expect_input_error(r, "--out output: cannot write '/nonexistent/dir/out.npy'");
}

}  // namespace
}  // namespace cvattn
