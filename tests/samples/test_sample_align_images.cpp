// The align_images sample on the bundled photo and its copy warped by a known affine: every PNG
// at the template's size and not blank, and the gradient-descent estimate within a pixel of the
// known warp at the corners (findTransformECC's figures printed beside it).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "support/samples.hpp"

namespace cvattn::test {
namespace {

using SampleAlignImages = SampleTest;

double figure(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1;
  return std::stod(m[1].str());
}

TEST_F(SampleAlignImages, RecoversTheKnownWarp) {
  const SampleRun r = run("align_images", out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const cv::Size size(320, 213);  // assets/images/chelsea.jpg
  for (const char* name :
       {"template", "moving", "diff_before", "aligned_gd", "aligned_ecc", "diff_gd", "diff_ecc"}) {
    expect_image(out() / (std::string(name) + ".png"), size);
  }
  expect_image(out() / "align_images.png", {4 * 320, 2 * (213 + 24)});

  const double gd = figure(r.out, R"(gradient descent .*corner error ([\d.]+) px)");
  const double ecc = figure(r.out, R"(findTransformECC .*corner error ([\d.]+) px)");
  EXPECT_GE(gd, 0.0) << r.out;
  EXPECT_LT(gd, 1.0) << r.out;
  EXPECT_GE(ecc, 0.0) << r.out;
  EXPECT_GE(figure(r.out, R"(gradient descent .*time ([\d.]+) ms)"), 0.0) << r.out;
  EXPECT_GE(figure(r.out, R"(findTransformECC .*time ([\d.]+) ms)"), 0.0) << r.out;
}

TEST_F(SampleAlignImages, AlignsTwoGivenFiles) {
  // The warped copy written by a first run, given back as the moving image.
  ASSERT_EQ(run("align_images", out_arg()).exit_code, 0);
  const std::string moving = (out() / "moving.png").string();
  const SampleRun r =
      run("align_images", "--moving='" + moving + "' --output='" + (out() / "pair").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No known warp: the two methods agree with each other instead.
  const double apart = figure(r.out, R"(differ by ([\d.]+) px)");
  EXPECT_GE(apart, 0.0) << r.out;
  EXPECT_LT(apart, 1.0) << r.out;
  expect_image(out() / "pair" / "aligned_gd.png", {320, 213});
}

TEST_F(SampleAlignImages, HelpAndBadInput) {
  const SampleRun help = run("align_images", "--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--moving"), std::string::npos) << help.out;
  const SampleRun bad = run("align_images", "--image=/nonexistent.png");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("align_images: error: cannot read image"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace cvattn::test
