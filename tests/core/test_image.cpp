#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/core/image.hpp"
#include "support/call.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

cv::Mat bgr_image() {
  cv::Mat img(3, 4, CV_8UC3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) img.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * x, 50 + y, 200);
  return img;
}

TEST(Image, FromImageFollowsBlobFromImageWithStd) {
  const cv::Mat img = bgr_image();
  // ((v - mean) * scale) / std; with swap_rb, mean and std are in the blob's RGB order.
  const Tensor t = from_image(img, ImageOptions()
                                       .scale(1.0 / 255)
                                       .mean(cv::Scalar(1, 2, 3))
                                       .std(cv::Scalar(0.5, 0.25, 0.125))
                                       .swap_rb(true));
  ASSERT_EQ(t.shape(), (Shape{1, 3, 3, 4}));
  // channel 0 is R = 200, mean 1, std 0.5
  EXPECT_NEAR(t.at(0, 0, 1, 2), (200 - 1) / 255.0 / 0.5, 1e-5);
  // channel 1 is G = 50 + y
  EXPECT_NEAR(t.at(0, 1, 2, 0), (52 - 2) / 255.0 / 0.25, 1e-5);
  // channel 2 is B = 10 x, mean 3, std 0.125
  EXPECT_NEAR(t.at(0, 2, 0, 3), (30 - 3) / 255.0 / 0.125, 1e-5);
}

TEST(Image, ToImageInvertsFromImage) {
  const cv::Mat img = bgr_image();
  const ImageOptions o = ImageOptions()
                             .scale(1.0 / 255)
                             .mean(cv::Scalar(5, 6, 7))
                             .swap_rb(true)
                             .std(cv::Scalar(0.2, 0.3, 0.4));
  const cv::Mat back = to_image(from_image(img, o), 0, o);
  ASSERT_EQ(back.type(), CV_8UC3);
  EXPECT_EQ(cv::norm(back, img, cv::NORM_INF), 0.0);
}

TEST(Image, BatchesAndResizes) {
  const Tensor t = from_images({bgr_image(), bgr_image()}, ImageOptions().size(cv::Size(8, 6)));
  EXPECT_EQ(t.shape(), (Shape{2, 3, 6, 8}));
}

TEST(Image, GrayAndFloatImages) {
  cv::Mat gray(2, 2, CV_32F, cv::Scalar(0.5));
  const Tensor t = from_image(gray);
  EXPECT_EQ(t.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_FLOAT_EQ(t[3], 0.5f);
}

TEST(Image, RejectsBadImages) {
  EXPECT_THAT(test::Call([] { (void)from_image(cv::Mat()); }),
              ThrowsMessage<ValueError>(HasSubstr("empty")));
  cv::Mat two(2, 2, CV_8UC2);
  EXPECT_THAT(test::Call([&] { (void)from_image(two); }),
              ThrowsMessage<ValueError>(HasSubstr("1, 3 or 4 channels, got 2")));
  EXPECT_THROW((void)from_image(bgr_image(), ImageOptions().std(cv::Scalar(1, 0, 1))), ValueError);
  EXPECT_THROW((void)to_image(Tensor::zeros({1, 2, 3, 3})), ShapeError);
}

}  // namespace
}  // namespace cvattn
