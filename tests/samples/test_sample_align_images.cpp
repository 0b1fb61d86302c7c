// The align_images sample on the bundled photo and its copy warped by a known affine: every PNG
// at the template's size and not blank, and the gradient-descent estimate within a pixel of the
// known warp at the corners (findTransformECC's figures printed beside it).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "samples/sample_run.hpp"

namespace cvattn::test {
namespace {

double figure(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1;
  return std::stod(m[1].str());
}

TEST(SampleAlignImages, RecoversTheKnownWarp) {
  const TempDir dir("sample_align_images");
  const RunResult r = run_command(std::string(CVATTN_SAMPLE) + " --output=" + dir.path().string());
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Size size(320, 213);  // assets/images/chelsea.jpg
  for (const char* name :
       {"template", "moving", "diff_before", "aligned_gd", "aligned_ecc", "diff_gd", "diff_ecc"}) {
    expect_picture(dir.path() / (std::string(name) + ".png"), size);
  }
  expect_picture(dir.path() / "align_images.png", {4 * 320, 2 * (213 + 24)});

  const double gd = figure(r.output, R"(gradient descent .*corner error ([\d.]+) px)");
  const double ecc = figure(r.output, R"(findTransformECC .*corner error ([\d.]+) px)");
  EXPECT_GE(gd, 0.0) << r.output;
  EXPECT_LT(gd, 1.0) << r.output;
  EXPECT_GE(ecc, 0.0) << r.output;
  EXPECT_GE(figure(r.output, R"(gradient descent .*time ([\d.]+) ms)"), 0.0) << r.output;
  EXPECT_GE(figure(r.output, R"(findTransformECC .*time ([\d.]+) ms)"), 0.0) << r.output;
}

TEST(SampleAlignImages, AlignsTwoGivenFiles) {
  // The warped copy written by a first run, given back as the moving image.
  const TempDir dir("sample_align_images_pair");
  ASSERT_EQ(run_command(std::string(CVATTN_SAMPLE) + " --output=" + dir.path().string()).status, 0);
  const std::string moving = (dir.path() / "moving.png").string();
  const RunResult r = run_command(std::string(CVATTN_SAMPLE) + " --moving=" + moving +
                                  " --output=" + (dir.path() / "pair").string());
  ASSERT_EQ(r.status, 0) << r.output;
  // No known warp: the two methods agree with each other instead.
  const double apart = figure(r.output, R"(differ by ([\d.]+) px)");
  EXPECT_GE(apart, 0.0) << r.output;
  EXPECT_LT(apart, 1.0) << r.output;
  expect_picture(dir.path() / "pair" / "aligned_gd.png", {320, 213});
}

TEST(SampleAlignImages, HelpAndBadInput) {
  const RunResult help = run_command(std::string(CVATTN_SAMPLE) + " --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--moving"), std::string::npos) << help.output;
  const RunResult bad = run_command(std::string(CVATTN_SAMPLE) + " --image=/nonexistent.png");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("align_images: error: cannot read image"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace cvattn::test
