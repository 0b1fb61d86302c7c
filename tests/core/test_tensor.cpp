#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <opencv2/dnn.hpp>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"
#include "support/call.hpp"
#include "support/random.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Tensor, DefaultIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.numel(), 0);
}

TEST(Tensor, ZerosAndFull) {
  Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.numel(), 6);
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(z[i], 0.0f);
  Tensor f = Tensor::full({4}, 1.5f);
  EXPECT_EQ(f[3], 1.5f);
}

TEST(Tensor, StorageIsSixtyFourByteAligned) {
  for (int n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty({n});
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u) << n;
  }
}

TEST(Tensor, CopiesShareStorageAndCloneDoesNot) {
  Tensor a = Tensor::zeros({2, 2});
  Tensor b = a;
  b[0] = 5.0f;
  EXPECT_EQ(a[0], 5.0f);
  Tensor c = a.clone();
  c[0] = 7.0f;
  EXPECT_EQ(a[0], 5.0f);
}

TEST(Tensor, ReshapeIsAViewAndInfersMinusOne) {
  Tensor a = Tensor::from_vector({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor b = a.reshape({3, -1});
  EXPECT_EQ(b.shape(), (Shape{3, 2}));
  b[5] = 50.0f;
  EXPECT_EQ(a[5], 50.0f);
  EXPECT_THAT(test::Call([&] {
                (void)a.reshape({4, 2});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("cannot view [2, 3]")));
  EXPECT_THROW((void)a.reshape({-1, -1}), ShapeError);
}

TEST(Tensor, SliceAndSelectAlongDimZero) {
  Tensor a = Tensor::from_vector({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor s = a.slice0(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s[0], 2.0f);
  s[0] = 20.0f;
  EXPECT_EQ(a[2], 20.0f);
  Tensor row = a.select0(2);
  EXPECT_EQ(row.shape(), (Shape{2}));
  EXPECT_EQ(row[1], 5.0f);
  EXPECT_THROW((void)a.slice0(2, 4), ShapeError);
}

TEST(Tensor, AdoptsBlobFromImageWithoutCopy) {
  cv::Mat img(5, 7, CV_8UC3, cv::Scalar(10, 20, 30));
  cv::Mat blob = cv::dnn::blobFromImage(img, 1.0 / 255);
  Tensor t(blob);
  EXPECT_EQ(t.shape(), (Shape{1, 3, 5, 7}));
  EXPECT_EQ(t.data(), blob.ptr<float>());
  EXPECT_FLOAT_EQ(t.at(0, 2, 4, 6), 30.0f / 255);
}

TEST(Tensor, ToMatKeepsStorageAlive) {
  cv::Mat m;
  {
    Tensor t = Tensor::full({2, 3, 4}, 3.0f);
    m = t.to_mat();
  }
  ASSERT_EQ(m.dims, 3);
  EXPECT_EQ(m.size[0], 2);
  EXPECT_EQ(m.size[2], 4);
  EXPECT_EQ(m.ptr<float>()[23], 3.0f);
}

TEST(Tensor, PlaneIsAHeaderIntoThePlane) {
  Tensor t = test::random_tensor({2, 3, 4, 5}, 1);
  cv::Mat p = t.plane(1, 2);
  EXPECT_EQ(p.rows, 4);
  EXPECT_EQ(p.cols, 5);
  EXPECT_EQ(p.at<float>(3, 4), t.at(1, 2, 3, 4));
  p.at<float>(0, 0) = 42.0f;
  EXPECT_EQ(t.at(1, 2, 0, 0), 42.0f);
}

TEST(Tensor, TwoDimensionalMultiChannelMatGetsChannelsLast) {
  cv::Mat m(4, 6, CV_32FC2, cv::Scalar(1, 2));
  Tensor t(m);
  EXPECT_EQ(t.shape(), (Shape{4, 6, 2}));
  EXPECT_EQ(t[1], 2.0f);
}

TEST(Tensor, RejectsNonFloatAndNonContinuousMats) {
  cv::Mat u8(3, 3, CV_8U);
  EXPECT_THAT(test::Call([&] { Tensor t(u8); }), ThrowsMessage<ShapeError>(HasSubstr("CV_32F")));
  cv::Mat big(8, 8, CV_32F);
  cv::Mat roi = big(cv::Rect(1, 1, 3, 3));
  EXPECT_THAT(test::Call([&] { Tensor t(roi); }),
              ThrowsMessage<ShapeError>(HasSubstr("continuous")));
}

TEST(Tensor, NchwRequiresRankFour) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_THAT(test::Call([&] { (void)t.nchw("x"); }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("x: expected a rank-4 [N, C, H, W] tensor, got [2, 3, 4]")));
}

TEST(Tensor, SizesAreOverflowChecked) {
  EXPECT_THROW((void)Tensor::empty({1 << 30, 1 << 30, 1 << 30}), ValueError);
  EXPECT_THROW((void)Tensor::empty({INT64_MAX, 2}), ValueError);
  EXPECT_THROW((void)Tensor::empty({-1, 2}), ShapeError);
  EXPECT_THROW((void)Tensor::empty({1, 1, 1, 1, 1, 1, 1}), ShapeError);
}

TEST(Tensor, AllocationCapIsEnforcedBeforeAllocating) {
  const auto old = max_tensor_bytes();
  set_max_tensor_bytes(1024);
  EXPECT_NO_THROW((void)Tensor::empty({256}));
  EXPECT_THAT(test::Call([&] { (void)Tensor::empty({257}); }),
              ThrowsMessage<ValueError>(HasSubstr("over the allocation cap of 1024 bytes")));
  set_max_tensor_bytes(old);
  EXPECT_THROW(set_max_tensor_bytes(0), ValueError);
}

TEST(Tensor, CheckShapeNamesTensorAndShapes) {
  Tensor t = Tensor::zeros({2, 32, 14, 14});
  EXPECT_NO_THROW(check_shape(t, {kAny, 32, kAny, kAny}, "x", "Foo::forward"));
  EXPECT_THAT(test::Call([&] {
                check_shape(t, {kAny, 64, kAny, kAny}, "x", "Foo::forward");
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "Foo::forward: tensor 'x' expected shape [*, 64, *, *], got [2, 32, 14, 14]")));
}

// fuzz_npy and fuzz_cli_args found that formatting this message computed numel * 4 with signed
// overflow for shapes of more than 2^61 elements.
TEST(Tensor, CapMessageForShapesBeyondInt64Bytes) {
  EXPECT_THAT(test::Call([] { (void)Tensor::empty({std::int64_t{1} << 62}); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("needs more than 9223372036854775807 bytes, over the allocation cap")));
  EXPECT_THAT(test::Call([] { (void)Tensor::empty({std::int64_t{1} << 40}); }),
              ThrowsMessage<ValueError>(HasSubstr("needs 4398046511104 bytes")));
}

TEST(Tensor, AllFinite) {
  Tensor t = Tensor::zeros({3});
  EXPECT_TRUE(t.all_finite());
  t[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(t.all_finite());
}

}  // namespace
}  // namespace cvattn
