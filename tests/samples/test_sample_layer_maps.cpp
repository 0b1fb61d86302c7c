// The layer_maps sample on bundled photos: one sheet per image with every map of issue 19's
// item 5, routing weights printed in range (sigmoid) and summing to one (softmax), and bad
// options refused with exit status 2.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "support/samples.hpp"

namespace cvattn::test {
namespace {

using SampleLayerMaps = SampleTest;

TEST_F(SampleLayerMaps, SheetsAndRoutingPerImage) {
  const SampleRun r = run(
      "layer_maps", "--input=images/chelsea.jpg,images/astronaut.jpg --query=5,27 " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 10 panels in 4 columns of 256 + a 22-pixel label.
  expect_picture(out() / "chelsea_layers.png", {4 * 256, 3 * (256 + 22)});
  expect_picture(out() / "astronaut_layers.png", {4 * 256, 3 * (256 + 22)});
  const std::regex line(
      R"((\w+)\.jpg: cond_conv routing \[([0-9. ]+)\], dynamic_conv attention \[([0-9. ]+)\])");
  int images = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it, ++images) {
    std::istringstream route((*it)[2].str()), pi((*it)[3].str());
    double v = 0.0, sum = 0.0;
    int k = 0;
    while (route >> v) {
      EXPECT_GT(v, 0.0);
      EXPECT_LT(v, 1.0);
      ++k;
    }
    EXPECT_EQ(k, 4);
    k = 0;
    while (pi >> v) {
      sum += v;
      ++k;
    }
    EXPECT_EQ(k, 4);
    EXPECT_NEAR(sum, 1.0, 2e-3);  // printed to 3 decimals
  }
  EXPECT_EQ(images, 2) << r.out;
  EXPECT_NE(r.out.find("wrote 2 PNGs"), std::string::npos) << r.out;
}

TEST_F(SampleLayerMaps, BadOptionsAreErrors) {
  for (const char* args :
       {"--query=32,0", "--query=a,b", "--query=1", "--qeury=1,1", "--input=no_such_image.png"}) {
    const SampleRun r = run("layer_maps", std::string(args) + " " + out_arg());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
    EXPECT_FALSE(r.signalled) << args;
  }
}

}  // namespace
}  // namespace cvattn::test
