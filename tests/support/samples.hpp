#pragma once
// Running the sample programs (samples/) from tests: SampleTest runs a sample binary of
// CVATTN_SAMPLES_DIR into the test's scratch folder (CliTest's run_program, so stdout and stderr
// are captured apart), and expect_image / expect_picture check the PNGs it wrote.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "support/cli.hpp"

#ifndef CVATTN_SAMPLES_DIR
#error "CVATTN_SAMPLES_DIR must name the folder of the sample binaries"
#endif

namespace cvattn::test {

using SampleRun = CliResult;

class SampleTest : public CliTest {
 protected:
  SampleRun run(const std::string& sample, const std::string& args) {
    return run_program((std::filesystem::path(CVATTN_SAMPLES_DIR) / sample).string(), args);
  }
  // The folder the samples are told to write to (--output), inside the scratch folder.
  std::filesystem::path out() const { return dir_ / "out"; }
  std::string out_arg() const { return "--output='" + out().string() + "'"; }
};

namespace detail {

// Reads the PNG into `image` and checks it has `size` (empty: any) and that the standard
// deviations of its channels sum to more than `min_spread`.
inline void read_image(const std::filesystem::path& file, cv::Size size, double min_spread,
                       cv::Mat& image) {
  ASSERT_TRUE(std::filesystem::exists(file)) << "missing";
  image = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(image.empty()) << "unreadable";
  if (!size.empty()) {
    EXPECT_EQ(image.size(), size);
  }
  cv::Scalar mean, stddev;
  cv::meanStdDev(image, mean, stddev);
  EXPECT_GT(stddev[0] + stddev[1] + stddev[2], min_spread) << "blank or near-flat image";
}

}  // namespace detail

// The PNG exists, has `size` (empty: any) and is not blank (some pixel spread). For outputs
// that may be nearly flat, such as difference images.
inline void expect_image(const std::filesystem::path& file, cv::Size size = {}) {
  SCOPED_TRACE(file.string());
  cv::Mat image;
  detail::read_image(file, size, 0.0, image);
}

// The PNG exists, is 8-bit BGR of `size` (empty: any) and is a picture: several distinct
// colours and a real spread of values, not a flat or near-flat canvas.
inline void expect_picture(const std::filesystem::path& file, cv::Size size = {}) {
  SCOPED_TRACE(file.string());
  cv::Mat image;
  ASSERT_NO_FATAL_FAILURE(detail::read_image(file, size, 30.0, image));
  EXPECT_EQ(image.type(), CV_8UC3);
  cv::Mat green;
  cv::extractChannel(image, green, 1);
  int bins = 0;
  for (int v = 0; v < 256; v += 8) bins += cv::countNonZero((green >= v) & (green < v + 8)) > 0;
  EXPECT_GE(bins, 8);
}

}  // namespace cvattn::test
