#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cvattn/core/error.hpp"
#include "cvattn/viz/viz.hpp"
#include "support/call.hpp"

namespace cvattn::viz {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// TURBO's end points from its published table (Mikhailov 2019), as OpenCV rounds them to 8 bits:
// value 0 is RGB (0.18995, 0.07176, 0.23217), value 255 is RGB (0.47960, 0.01583, 0.01055).
// Written here in BGR order, which is what applyColorMap returns.
const cv::Vec3b kTurbo0(59, 18, 48);
const cv::Vec3b kTurbo255(3, 4, 122);

// JET's end points: value 0 is dark blue, value 255 dark red (BGR).
const cv::Vec3b kJet0(128, 0, 0);
const cv::Vec3b kJet255(0, 0, 128);

Tensor hot_pixel_map(int h, int w, int y, int x, float hot = 1.0f) {
  Tensor t = Tensor::zeros({h, w});
  t[y * w + x] = hot;
  return t;
}

cv::Vec3b colormap_colour(cv::ColormapTypes map, int value) {
  cv::Mat v(1, 1, CV_8U, cv::Scalar(value)), out;
  cv::applyColorMap(v, out, map);
  return out.at<cv::Vec3b>(0, 0);
}

// Anti-aliased drawing leaves a few levels of blending at a shape's centre.
bool near_colour(const cv::Vec3b& a, const cv::Vec3b& b, int tol = 8) {
  for (int i = 0; i < 3; ++i)
    if (std::abs(a[i] - b[i]) > tol) return false;
  return true;
}

int count_colour(const cv::Mat& img, cv::Vec3b colour) {
  int n = 0;
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) n += img.at<cv::Vec3b>(y, x) == colour;
  return n;
}

// ---- parse ------------------------------------------------------------------------------------

TEST(ParseColormap, KnowsEveryOpenCvColormap) {
  EXPECT_EQ(parse_colormap("turbo"), cv::COLORMAP_TURBO);
  EXPECT_EQ(parse_colormap("jet"), cv::COLORMAP_JET);
  EXPECT_EQ(parse_colormap("autumn"), cv::COLORMAP_AUTUMN);
  EXPECT_EQ(parse_colormap("twilight_shifted"), cv::COLORMAP_TWILIGHT_SHIFTED);
  EXPECT_EQ(parse_colormap("deepgreen"), cv::COLORMAP_DEEPGREEN);
  EXPECT_THAT(test::Call([] { (void)parse_colormap("Turbo"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown colormap 'Turbo'; expected one of")));
}

TEST(ParseNormalization, KnowsThreeWords) {
  EXPECT_EQ(parse_normalization("min_max"), Normalization::min_max);
  EXPECT_EQ(parse_normalization("percentile"), Normalization::percentile);
  EXPECT_EQ(parse_normalization("fixed"), Normalization::fixed);
  EXPECT_THAT(test::Call([] { (void)parse_normalization("minmax"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown normalization 'minmax'")));
}

// ---- heatmap ----------------------------------------------------------------------------------

TEST(Heatmap, HotPixelGetsTurbo255InBgrOrder) {
  const cv::Mat h = heatmap(hot_pixel_map(4, 5, 1, 3));
  ASSERT_EQ(h.type(), CV_8UC3);
  ASSERT_EQ(h.size(), cv::Size(5, 4));
  EXPECT_EQ(h.at<cv::Vec3b>(1, 3), kTurbo255);
  EXPECT_EQ(h.at<cv::Vec3b>(0, 0), kTurbo0);
  EXPECT_EQ(h.at<cv::Vec3b>(3, 4), kTurbo0);
  EXPECT_EQ(count_colour(h, kTurbo255), 1);
  EXPECT_EQ(count_colour(h, kTurbo0), 19);
}

TEST(Heatmap, JetIsSelectable) {
  const cv::Mat h =
      heatmap(hot_pixel_map(3, 3, 2, 0), {}, HeatmapOptions().colormap(cv::COLORMAP_JET));
  EXPECT_EQ(h.at<cv::Vec3b>(2, 0), kJet255);
  EXPECT_EQ(h.at<cv::Vec3b>(0, 0), kJet0);
}

TEST(Heatmap, EveryColormapMapsTheExtremes) {
  for (int c = 0; c <= cv::COLORMAP_DEEPGREEN; ++c) {
    const auto map = static_cast<cv::ColormapTypes>(c);
    const cv::Mat h = heatmap(hot_pixel_map(2, 2, 0, 1), {}, HeatmapOptions().colormap(map));
    EXPECT_EQ(h.at<cv::Vec3b>(0, 1), colormap_colour(map, 255)) << "colormap " << c;
    EXPECT_EQ(h.at<cv::Vec3b>(1, 0), colormap_colour(map, 0)) << "colormap " << c;
  }
}

TEST(Heatmap, UpsamplesBilinearlyToTheRequestedSize) {
  // A 2x2 map [[0, 1], [0, 1]] resized to 8x4: bilinear with half-pixel centres, so the left two
  // columns stay 0, the right two stay 1 and columns 2..5 ramp through 1/8, 3/8, 5/8, 7/8.
  const Tensor map = Tensor::from_vector({2, 2}, {0, 1, 0, 1});
  const cv::Mat h = heatmap(map, cv::Size(8, 4));
  ASSERT_EQ(h.size(), cv::Size(8, 4));
  EXPECT_EQ(h.at<cv::Vec3b>(0, 0), kTurbo0);
  EXPECT_EQ(h.at<cv::Vec3b>(3, 1), kTurbo0);
  EXPECT_EQ(h.at<cv::Vec3b>(2, 6), kTurbo255);
  EXPECT_EQ(h.at<cv::Vec3b>(1, 7), kTurbo255);
  EXPECT_EQ(h.at<cv::Vec3b>(0, 2), colormap_colour(cv::COLORMAP_TURBO, 32));   // 0.125 * 255
  EXPECT_EQ(h.at<cv::Vec3b>(0, 4), colormap_colour(cv::COLORMAP_TURBO, 159));  // 0.625 * 255
}

TEST(Heatmap, AcceptsEveryMapLayoutAndPicksTheSample) {
  Tensor nchw = Tensor::zeros({3, 1, 2, 4});
  nchw[1 * 8 + 1 * 4 + 2] = 5.0f;  // sample 1, (y 1, x 2)
  const cv::Mat h = heatmap(nchw, {}, HeatmapOptions().sample(1));
  EXPECT_EQ(h.at<cv::Vec3b>(1, 2), kTurbo255);
  const cv::Mat h3 = heatmap(nchw.reshape({3, 2, 4}), {}, HeatmapOptions().sample(1));
  EXPECT_EQ(cv::norm(h, h3, cv::NORM_INF), 0.0);
  // Sample 0 is constant: min-max gives the lowest colour everywhere.
  EXPECT_EQ(count_colour(heatmap(nchw), kTurbo0), 8);
  const cv::Mat one = heatmap(nchw.slice0(1, 2).reshape({1, 2, 4}));
  EXPECT_EQ(cv::norm(h, one, cv::NORM_INF), 0.0);
}

TEST(Heatmap, AcceptsCvMatOfAnyDepth) {
  cv::Mat m = cv::Mat::zeros(3, 4, CV_8U);
  m.at<uchar>(2, 1) = 200;
  EXPECT_EQ(heatmap(m).at<cv::Vec3b>(2, 1), kTurbo255);
  cv::Mat d = cv::Mat::zeros(3, 4, CV_64F);
  d.at<double>(0, 3) = -1.0;  // the minimum
  const cv::Mat h = heatmap(d);
  EXPECT_EQ(h.at<cv::Vec3b>(0, 3), kTurbo0);
  EXPECT_EQ(h.at<cv::Vec3b>(1, 1), kTurbo255);
}

TEST(Heatmap, FixedRangeComparesHonestly) {
  // A sigmoid gate of 0.5 everywhere is drawn as the middle colour, not stretched.
  const Tensor gate = Tensor::full({2, 3}, 0.5f);
  const cv::Mat h = heatmap(gate, {}, HeatmapOptions().range(0, 1));
  EXPECT_EQ(h.at<cv::Vec3b>(1, 2), colormap_colour(cv::COLORMAP_TURBO, 128));
  // Values outside the range saturate.
  const Tensor wide = Tensor::from_vector({1, 2}, {-3.0f, 7.0f});
  const cv::Mat w = heatmap(wide, {}, HeatmapOptions().range(0, 1));
  EXPECT_EQ(w.at<cv::Vec3b>(0, 0), kTurbo0);
  EXPECT_EQ(w.at<cv::Vec3b>(0, 1), kTurbo255);
}

TEST(Heatmap, PercentilesClipOutliers) {
  // Values 0..99 plus one huge outlier: min-max crushes 0..99 into the lowest colours, the
  // [0, 99] percentile range keeps value 50 near the middle.
  std::vector<float> v(101);
  for (int i = 0; i < 100; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  v[100] = 1e6f;
  const Tensor map = Tensor::from_vector({1, 101}, v);
  const cv::Mat mm = heatmap(map);
  EXPECT_EQ(mm.at<cv::Vec3b>(0, 50), kTurbo0);
  const cv::Mat pc = heatmap(map, {}, HeatmapOptions().percentiles(0, 99));
  // numpy.percentile(v, 99) with 101 values sits at position 0.99 * 100 = 99: exactly the sorted
  // value 99; percentile 0 is 0. So 50 maps to 50/99 * 255 = 128.79 -> 129.
  EXPECT_EQ(pc.at<cv::Vec3b>(0, 50), colormap_colour(cv::COLORMAP_TURBO, 129));
  EXPECT_EQ(pc.at<cv::Vec3b>(0, 100), kTurbo255);
  EXPECT_EQ(pc.at<cv::Vec3b>(0, 0), kTurbo0);
}

TEST(Heatmap, NonFiniteValuesHaveADefinedColour) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor map = Tensor::from_vector({1, 5}, {nan, 0.0f, 2.0f, inf, -inf});
  const cv::Mat h = heatmap(map);
  EXPECT_EQ(h.at<cv::Vec3b>(0, 0), kTurbo0);    // NaN: the low end
  EXPECT_EQ(h.at<cv::Vec3b>(0, 1), kTurbo0);    // finite min
  EXPECT_EQ(h.at<cv::Vec3b>(0, 2), kTurbo255);  // finite max
  EXPECT_EQ(h.at<cv::Vec3b>(0, 3), kTurbo255);  // +inf: the high end
  EXPECT_EQ(h.at<cv::Vec3b>(0, 4), kTurbo0);    // -inf: the low end
  // Entirely NaN, upsampled: still defined.
  const cv::Mat all = heatmap(Tensor::full({2, 2}, nan), cv::Size(6, 6));
  EXPECT_EQ(count_colour(all, kTurbo0), 36);
  const cv::Mat pc = heatmap(map, {}, HeatmapOptions().percentiles(5, 95));
  EXPECT_EQ(pc.at<cv::Vec3b>(0, 0), kTurbo0);
}

TEST(Heatmap, RejectsBadMapsAndOptions) {
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({2, 3, 4, 5}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("heatmap: tensor 'map' expected [H, W], [N, H, W] or [N, 1, H, W], got "
                            "[2, 3, 4, 5]")));
  EXPECT_THAT(test::Call([] { (void)heatmap(Tensor::zeros({5})); }),
              ThrowsMessage<ShapeError>(HasSubstr("got [5]")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({0, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected a non-empty map, got [0, 3]")));
  EXPECT_THAT(test::Call([] { (void)heatmap(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("'map'")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({2, 1, 3, 3}), {}, HeatmapOptions().sample(2));
              }),
              ThrowsMessage<ValueError>(HasSubstr("sample 2 out of range for tensor 'map' "
                                                  "[2, 1, 3, 3]")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({3, 3}), {}, HeatmapOptions().range(1, 1));
              }),
              ThrowsMessage<ValueError>(HasSubstr("fixed range expected finite low < high, "
                                                  "got [1, 1]")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({3, 3}), {}, HeatmapOptions().percentiles(10, 101));
              }),
              ThrowsMessage<ValueError>(HasSubstr("percentiles expected 0 <= low <= high <= 100")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(
                    Tensor::zeros({3, 3}), {},
                    // 30 is representable in the enum (its values need 5 bits) but names no map.
                    HeatmapOptions().colormap(static_cast<cv::ColormapTypes>(30)));
              }),
              ThrowsMessage<ValueError>(HasSubstr("colormap 30 is not a cv::ColormapTypes value")));
  EXPECT_THAT(test::Call([] { (void)heatmap(cv::Mat()); }),
              ThrowsMessage<ValueError>(HasSubstr("heatmap: the map is empty")));
  EXPECT_THAT(test::Call([] { (void)heatmap(cv::Mat(3, 3, CV_8UC3)); }),
              ThrowsMessage<ShapeError>(HasSubstr("single-channel 2-D map")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({2, 2}), cv::Size(1 << 30, 1 << 30));
              }),
              ThrowsMessage<ValueError>(HasSubstr("exceeds the allocation cap")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({2, 2}), cv::Size(-3, 4));
              }),
              ThrowsMessage<ValueError>(HasSubstr("image size expected positive, got -3x4")));
  EXPECT_THAT(test::Call([] {
                (void)heatmap(Tensor::zeros({2, 2}), cv::Size(0, 4));
              }),
              ThrowsMessage<ValueError>(HasSubstr("image size expected positive, got 0x4")));
}

// ---- overlay ----------------------------------------------------------------------------------

cv::Mat uniform_bgr(int h, int w, cv::Vec3b colour) {
  return cv::Mat(h, w, CV_8UC3, cv::Scalar(colour[0], colour[1], colour[2]));
}

TEST(Overlay, AlphaZeroReturnsTheInput) {
  cv::Mat img(6, 7, CV_8UC3);
  cv::randu(img, 0, 256);
  const cv::Mat out = overlay(img, hot_pixel_map(3, 3, 1, 1), OverlayOptions().alpha(0.0));
  EXPECT_EQ(cv::norm(out, img, cv::NORM_INF), 0.0);
  EXPECT_NE(out.data, img.data);  // a new image, the input untouched
}

TEST(Overlay, AlphaOneIsTheHeatmap) {
  const cv::Mat img = uniform_bgr(4, 4, {1, 2, 3});
  const cv::Mat out = overlay(img, hot_pixel_map(4, 4, 2, 1), OverlayOptions().alpha(1.0));
  EXPECT_EQ(out.at<cv::Vec3b>(2, 1), kTurbo255);
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), kTurbo0);
}

TEST(Overlay, BlendsInBgrOrder) {
  // Image pure red (BGR 0, 0, 200). The hot pixel's TURBO colour is dark red (BGR 3, 4, 122):
  // blending 50/50 must keep the red channel high and blue low. A swapped (RGB) colour map would
  // give blue 61 and red 101.
  const cv::Mat img = uniform_bgr(3, 3, {0, 0, 200});
  const cv::Mat out = overlay(img, hot_pixel_map(3, 3, 0, 2), OverlayOptions().alpha(0.5));
  const cv::Vec3b p = out.at<cv::Vec3b>(0, 2);
  EXPECT_NEAR(p[0], 0.5 * 0 + 0.5 * 3, 1);
  EXPECT_NEAR(p[1], 0.5 * 0 + 0.5 * 4, 1);
  EXPECT_NEAR(p[2], 0.5 * 200 + 0.5 * 122, 1);
  const cv::Vec3b q = out.at<cv::Vec3b>(2, 0);  // TURBO 0 is BGR (59, 18, 48)
  EXPECT_NEAR(q[0], 0.5 * 59, 1);
  EXPECT_NEAR(q[1], 0.5 * 18, 1);
  EXPECT_NEAR(q[2], 0.5 * 200 + 0.5 * 48, 1);
}

TEST(Overlay, UpsamplesTheMapToTheImage) {
  // A 2x2 map with its top-left hot over a 40x40 image: the top-left corner is hot, the
  // bottom-right corner cold.
  const cv::Mat img = uniform_bgr(40, 40, {0, 0, 0});
  const cv::Mat out = overlay(img, hot_pixel_map(2, 2, 0, 0), OverlayOptions().alpha(1.0));
  ASSERT_EQ(out.size(), cv::Size(40, 40));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), kTurbo255);
  EXPECT_EQ(out.at<cv::Vec3b>(39, 39), kTurbo0);
}

TEST(Overlay, AcceptsGrayAndBgraImagesAndCvMatMaps) {
  const cv::Mat gray(5, 5, CV_8U, cv::Scalar(100));
  const cv::Mat out = overlay(gray, hot_pixel_map(5, 5, 0, 0), OverlayOptions().alpha(0.0));
  EXPECT_EQ(out.type(), CV_8UC3);
  EXPECT_EQ(out.at<cv::Vec3b>(3, 3), cv::Vec3b(100, 100, 100));
  const cv::Mat bgra(5, 5, CV_8UC4, cv::Scalar(1, 2, 3, 4));
  const cv::Mat m = cv::Mat::zeros(5, 5, CV_32F);
  const cv::Mat o2 = overlay(bgra, m, OverlayOptions().alpha(0.0));
  EXPECT_EQ(o2.at<cv::Vec3b>(1, 1), cv::Vec3b(1, 2, 3));
}

TEST(Overlay, RejectsBadInput) {
  EXPECT_THAT(test::Call([] { (void)overlay(cv::Mat(), hot_pixel_map(2, 2, 0, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("overlay: the image is empty")));
  EXPECT_THAT(test::Call([] { (void)overlay(cv::Mat(4, 4, CV_32FC3), hot_pixel_map(2, 2, 0, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("expected an 8-bit image")));
  const std::vector<cv::Mat> several = {cv::Mat(4, 4, CV_8UC3), cv::Mat(4, 4, CV_8UC3)};
  EXPECT_THAT(test::Call([&] { (void)overlay(several, hot_pixel_map(2, 2, 0, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("expected a single image")));
  EXPECT_THAT(test::Call([] { (void)overlay(cv::Mat(4, 4, CV_8UC2), hot_pixel_map(2, 2, 0, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("expected 1, 3 or 4 channels, got 2")));
  const cv::Mat img = uniform_bgr(4, 4, {0, 0, 0});
  EXPECT_THAT(test::Call([&] {
                (void)overlay(img, hot_pixel_map(2, 2, 0, 0), OverlayOptions().alpha(1.5));
              }),
              ThrowsMessage<ValueError>(HasSubstr("alpha expected in [0, 1], got 1.5")));
  EXPECT_THAT(test::Call([&] {
                (void)overlay(img, hot_pixel_map(2, 2, 0, 0),
                              OverlayOptions().alpha(std::numeric_limits<double>::quiet_NaN()));
              }),
              ThrowsMessage<ValueError>(HasSubstr("alpha expected in [0, 1]")));
  EXPECT_THAT(test::Call([&] {
                (void)overlay(img, Tensor::zeros({1, 3, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("overlay: tensor 'map' expected")));
}

TEST(OverlayOptions, ConvertsToHeatmapOptions) {
  const HeatmapOptions h =
      OverlayOptions().colormap(cv::COLORMAP_JET).range(-1, 2).sample(3).heatmap();
  EXPECT_EQ(h.colormap(), cv::COLORMAP_JET);
  EXPECT_EQ(h.normalization(), Normalization::fixed);
  EXPECT_EQ(h.low(), -1.0);
  EXPECT_EQ(h.high(), 2.0);
  EXPECT_EQ(h.sample(), 3);
}

// ---- bar_chart --------------------------------------------------------------------------------

struct BarStats {
  int count = 0;
  double mean_x = 0;
  int height = 0;  // rows that contain the colour
};

BarStats bar_stats(const cv::Mat& img, cv::Vec3b colour) {
  BarStats s;
  int top = img.rows, bottom = -1;
  for (int y = 0; y < img.rows; ++y) {
    for (int x = 0; x < img.cols; ++x) {
      if (img.at<cv::Vec3b>(y, x) == colour) {
        ++s.count;
        s.mean_x += x;
        top = std::min(top, y);
        bottom = std::max(bottom, y);
      }
    }
  }
  if (s.count) s.mean_x /= s.count;
  s.height = bottom >= top ? bottom - top + 1 : 0;
  return s;
}

TEST(BarChart, BarHeightsOrderAndColours) {
  const Tensor w = Tensor::from_vector({3}, {0.25f, 1.0f, 0.5f});
  const cv::Mat img = bar_chart(w, BarChartOptions().size(cv::Size(300, 200)));
  ASSERT_EQ(img.size(), cv::Size(300, 200));
  ASSERT_EQ(img.type(), CV_8UC3);
  // The axis runs [0, 1]; bars are coloured by height: 0.25 -> 64, 1 -> 255, 0.5 -> 128.
  const BarStats a = bar_stats(img, colormap_colour(cv::COLORMAP_TURBO, 64));
  const BarStats b = bar_stats(img, kTurbo255);
  const BarStats c = bar_stats(img, colormap_colour(cv::COLORMAP_TURBO, 128));
  ASSERT_GT(a.count, 0);
  ASSERT_GT(b.count, 0);
  ASSERT_GT(c.count, 0);
  EXPECT_LT(a.mean_x, b.mean_x);
  EXPECT_LT(b.mean_x, c.mean_x);
  EXPECT_NEAR(b.height, 4 * a.height, 4);
  EXPECT_NEAR(b.height, 2 * c.height, 3);
  // Equal widths.
  EXPECT_NEAR(a.count / static_cast<double>(a.height), b.count / static_cast<double>(b.height), 1);
}

TEST(BarChart, TopKKeepsTheLargestInDescendingOrder) {
  const Tensor w = Tensor::from_vector({2, 3}, {9, 9, 9, 0.25f, 1.0f, 0.5f});
  const cv::Mat img = bar_chart(w, BarChartOptions().top_k(2).sample(1).size(cv::Size(300, 200)));
  const BarStats a = bar_stats(img, colormap_colour(cv::COLORMAP_TURBO, 64));
  const BarStats b = bar_stats(img, kTurbo255);
  const BarStats c = bar_stats(img, colormap_colour(cv::COLORMAP_TURBO, 128));
  EXPECT_EQ(a.count, 0);
  ASSERT_GT(b.count, 0);
  ASSERT_GT(c.count, 0);
  EXPECT_LT(b.mean_x, c.mean_x);
}

TEST(BarChart, FixedAxisAndNegativeWeights) {
  // A fixed [0, 2] axis: weight 1 is drawn in the middle colour and half as tall as the plot.
  const cv::Mat fixed = bar_chart(Tensor::from_vector({1}, {1.0f}),
                                  BarChartOptions().y_min(0).y_max(2).size(cv::Size(200, 200)));
  EXPECT_GT(bar_stats(fixed, colormap_colour(cv::COLORMAP_TURBO, 128)).count, 0);
  // Negative weights hang below the zero line.
  const cv::Mat neg = bar_chart(Tensor::from_vector({2}, {-1.0f, 1.0f}),
                                BarChartOptions().size(cv::Size(200, 200)));
  const BarStats lo = bar_stats(neg, kTurbo0);
  const BarStats hi = bar_stats(neg, kTurbo255);
  ASSERT_GT(lo.count, 0);
  ASSERT_GT(hi.count, 0);
  EXPECT_NEAR(lo.height, hi.height, 2);
}

TEST(BarChart, DrawsLabelsAndTitleAndSurvivesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor w = Tensor::from_vector({3}, {nan, 0.5f, 1.0f});
  const cv::Mat plain = bar_chart(w);
  const cv::Mat titled =
      bar_chart(w, BarChartOptions().labels({"red", "green", "blue"}).title("SE gate"));
  EXPECT_EQ(plain.size(), cv::Size(640, 320));
  EXPECT_GT(cv::norm(plain, titled, cv::NORM_L1), 0.0);
  // 512 channels still draw (labels thinned out).
  std::vector<float> many(512, 0.5f);
  EXPECT_EQ(bar_chart(Tensor::from_vector({512}, many)).size(), cv::Size(640, 320));
}

TEST(BarChart, RejectsBadInput) {
  EXPECT_THAT(test::Call([] {
                (void)bar_chart(Tensor::zeros({2, 3, 4}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("bar_chart: tensor 'weights' expected [C] or [N, C], got [2, 3, 4]")));
  EXPECT_THAT(test::Call([] { (void)bar_chart(Tensor::zeros({0})); }),
              ThrowsMessage<ShapeError>(HasSubstr("expected C >= 1")));
  EXPECT_THAT(
      test::Call([] { (void)bar_chart(Tensor::zeros({3}), BarChartOptions().labels({"a"})); }),
      ThrowsMessage<ValueError>(HasSubstr("expected 3 labels (one per channel), got 1")));
  EXPECT_THAT(test::Call([] {
                (void)bar_chart(Tensor::zeros({2, 3}), BarChartOptions().sample(2));
              }),
              ThrowsMessage<ValueError>(HasSubstr("sample 2 out of range")));
  EXPECT_THAT(test::Call([] { (void)bar_chart(Tensor::zeros({3}), BarChartOptions().top_k(-1)); }),
              ThrowsMessage<ValueError>(HasSubstr("top_k expected >= 0")));
  EXPECT_THAT(test::Call([] {
                (void)bar_chart(Tensor::zeros({3}), BarChartOptions().size({10, 10}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("size expected at least 64x64")));
  EXPECT_THAT(
      test::Call([] { (void)bar_chart(Tensor::zeros({3}), BarChartOptions().y_min(2).y_max(1)); }),
      ThrowsMessage<ValueError>(HasSubstr("finite y_min < y_max")));
}

// ---- draw_grid_outline ------------------------------------------------------------------------

// affine_grid of the identity theta (docs/modules.md 7): x_w = (2w + 1)/W - 1 without
// align_corners, -1 + 2w/(W-1) with it.
Tensor identity_grid(int n, int h, int w, bool align_corners) {
  Tensor g = Tensor::empty({n, h, w, 2});
  for (int b = 0; b < n; ++b)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        float* p = g.data() + ((b * h + y) * w + x) * 2;
        p[0] = align_corners ? -1.0f + 2.0f * x / (w - 1) : (2.0f * x + 1) / w - 1;
        p[1] = align_corners ? -1.0f + 2.0f * y / (h - 1) : (2.0f * y + 1) / h - 1;
      }
  return g;
}

bool is_green(const cv::Vec3b& p) { return p[1] > 100 && p[0] < 60 && p[2] < 60; }

void expect_traces_border(const cv::Mat& out) {
  const int h = out.rows, w = out.cols;
  for (int x = 0; x < w; ++x) {
    EXPECT_TRUE(is_green(out.at<cv::Vec3b>(0, x))) << "top, x " << x;
    EXPECT_TRUE(is_green(out.at<cv::Vec3b>(h - 1, x))) << "bottom, x " << x;
  }
  for (int y = 0; y < h; ++y) {
    EXPECT_TRUE(is_green(out.at<cv::Vec3b>(y, 0))) << "left, y " << y;
    EXPECT_TRUE(is_green(out.at<cv::Vec3b>(y, w - 1))) << "right, y " << y;
  }
  for (int y = 2; y < h - 2; ++y)
    for (int x = 2; x < w - 2; ++x)
      EXPECT_EQ(out.at<cv::Vec3b>(y, x), cv::Vec3b(0, 0, 0)) << "interior " << y << "," << x;
}

TEST(DrawGridOutline, IdentityGridTracesTheImageBorder) {
  const cv::Mat img = uniform_bgr(12, 16, {0, 0, 0});
  // The grid's border samples are the outermost pixel centres, whatever the grid resolution.
  expect_traces_border(draw_grid_outline(img, identity_grid(1, 12, 16, false)));
  expect_traces_border(draw_grid_outline(img, identity_grid(1, 12, 16, true),
                                         GridOutlineOptions().align_corners(true)));
  // align_corners=true maps -1/+1 to the outer pixel centres for any grid size.
  expect_traces_border(draw_grid_outline(img, identity_grid(1, 5, 7, true),
                                         GridOutlineOptions().align_corners(true)));
  EXPECT_TRUE(img.at<cv::Vec3b>(0, 0) == cv::Vec3b(0, 0, 0));  // the input is untouched
}

TEST(DrawGridOutline, ZoomedGridIsAnInnerRectangle) {
  // theta = 0.5 * identity samples the central half: an outline at a quarter of the image.
  Tensor g = identity_grid(2, 9, 9, true);
  for (std::int64_t i = 0; i < g.numel(); ++i) g[i] *= 0.5f;
  const cv::Mat img = uniform_bgr(41, 41, {0, 0, 0});
  const cv::Mat out = draw_grid_outline(img, g, GridOutlineOptions().align_corners(true).sample(1));
  // (g + 1)/2 * 40 at g = -0.5 and 0.5: pixels 10 and 30.
  EXPECT_TRUE(is_green(out.at<cv::Vec3b>(10, 20)));
  EXPECT_TRUE(is_green(out.at<cv::Vec3b>(30, 20)));
  EXPECT_TRUE(is_green(out.at<cv::Vec3b>(20, 10)));
  EXPECT_TRUE(is_green(out.at<cv::Vec3b>(20, 30)));
  EXPECT_EQ(out.at<cv::Vec3b>(20, 20), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(out.at<cv::Vec3b>(2, 2), cv::Vec3b(0, 0, 0));
  // The lattice adds inner lines: 2x2 cells put one through the centre.
  const cv::Mat lat =
      draw_grid_outline(img, g, GridOutlineOptions().align_corners(true).sample(1).lattice(2));
  EXPECT_TRUE(is_green(lat.at<cv::Vec3b>(20, 20)));
}

TEST(DrawGridOutline, SurvivesNonFiniteAndHugeCoordinates) {
  Tensor g = identity_grid(1, 6, 6, false);
  g[0] = std::numeric_limits<float>::quiet_NaN();
  g[7] = std::numeric_limits<float>::infinity();
  g[20] = 1e30f;
  const cv::Mat img = uniform_bgr(12, 12, {0, 0, 0});
  const cv::Mat out = draw_grid_outline(img, g, GridOutlineOptions().lattice(3));
  EXPECT_EQ(out.size(), img.size());
  Tensor nan_grid = Tensor::full({1, 3, 3, 2}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(cv::norm(draw_grid_outline(img, nan_grid), img, cv::NORM_INF), 0.0);
}

TEST(DrawGridOutline, RejectsBadInput) {
  const cv::Mat img = uniform_bgr(8, 8, {0, 0, 0});
  EXPECT_THAT(test::Call([&] {
                (void)draw_grid_outline(img, Tensor::zeros({1, 4, 4, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "draw_grid_outline: tensor 'grid' expected [N, H, W, 2], got [1, 4, 4, 3]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)draw_grid_outline(img, Tensor::zeros({1, 4, 4, 2}), GridOutlineOptions().sample(1));
      }),
      ThrowsMessage<ValueError>(HasSubstr("sample 1 out of range")));
  EXPECT_THAT(test::Call([&] {
                (void)draw_grid_outline(cv::Mat(), Tensor::zeros({1, 4, 4, 2}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("the image is empty")));
  EXPECT_THAT(test::Call([&] {
                (void)draw_grid_outline(img, Tensor::zeros({1, 4, 4, 2}),
                                        GridOutlineOptions().thickness(0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("thickness expected in [1, 64]")));
}

// ---- draw_sampling_points / deform_sampling_positions ----------------------------------------

TEST(DrawSamplingPoints, DotsInThePixelsColourPerOutputPixel) {
  const cv::Mat img = uniform_bgr(30, 30, {0, 0, 0});
  // Two output pixels, two taps each, coordinates (y, x) in image pixels.
  const Tensor centers = Tensor::from_vector({2, 2}, {5, 5, 22, 22});
  const Tensor taps = Tensor::from_vector({2, 2, 2}, {4, 20, 20, 5, 26, 12, 12, 26});
  const cv::Mat out =
      draw_sampling_points(img, centers, taps, SamplingPointsOptions().lines(false));
  // Colours: HSV colour map at 0 and 0.5 of its range.
  const cv::Vec3b c0 = colormap_colour(cv::COLORMAP_HSV, 0);
  const cv::Vec3b c1 = colormap_colour(cv::COLORMAP_HSV, 128);
  EXPECT_FALSE(near_colour(c0, c1, 60));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(4, 20), c0));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(20, 5), c0));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(26, 12), c1));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(12, 26), c1));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(5, 5), c0));  // the output pixel's cross
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(22, 22), c1));
  EXPECT_EQ(out.at<cv::Vec3b>(28, 2), cv::Vec3b(0, 0, 0));
  // Without lines the space between centre and tap stays untouched; with lines it is drawn.
  EXPECT_EQ(out.at<cv::Vec3b>(14, 5), cv::Vec3b(0, 0, 0));
  const cv::Mat lined = draw_sampling_points(img, centers, taps);
  EXPECT_TRUE(near_colour(lined.at<cv::Vec3b>(14, 5), c0, 30));  // a 1-px AA line
  EXPECT_EQ(cv::norm(img, uniform_bgr(30, 30, {0, 0, 0}), cv::NORM_INF), 0.0);
}

TEST(DrawSamplingPoints, MapsInputCoordinatesToTheImage) {
  // A 4x4 input drawn on a 44x44 image: input pixel centre (y 1, x 2) is image pixel (16, 27).
  const cv::Mat img = uniform_bgr(44, 44, {0, 0, 0});
  const Tensor centers = Tensor::from_vector({1, 2}, {0, 0});
  const Tensor taps = Tensor::from_vector({1, 1, 2}, {1, 2});
  const cv::Mat out = draw_sampling_points(
      img, centers, taps, SamplingPointsOptions().input_size(cv::Size(4, 4)).lines(false));
  const cv::Vec3b c0 = colormap_colour(cv::COLORMAP_HSV, 0);
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(16, 27), c0));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(5, 5), c0));  // centre (0, 0)
  EXPECT_EQ(out.at<cv::Vec3b>(16, 16), cv::Vec3b(0, 0, 0));
}

TEST(DrawSamplingPoints, MaskShrinksDotsAndNonFiniteTapsAreSkipped) {
  const cv::Mat img = uniform_bgr(30, 30, {0, 0, 0});
  const Tensor centers = Tensor::from_vector({1, 2}, {15, 15});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor taps = Tensor::from_vector({1, 3, 2}, {5, 5, 25, 25, nan, 3});
  const cv::Vec3b c0 = colormap_colour(cv::COLORMAP_HSV, 0);
  const cv::Mat full =
      draw_sampling_points(img, centers, taps, SamplingPointsOptions().radius(4).lines(false));
  const cv::Mat masked = draw_sampling_points(img, centers, taps,
                                              SamplingPointsOptions().radius(4).lines(false).mask(
                                                  Tensor::from_vector({1, 3}, {1, 0.25f, 1})));
  const cv::Rect near5(1, 1, 9, 9), near25(21, 21, 9, 9);
  EXPECT_EQ(count_colour(full(near5), c0), count_colour(masked(near5), c0));
  EXPECT_GT(count_colour(full(near25), c0), 2 * count_colour(masked(near25), c0));
}

TEST(DrawSamplingPoints, RejectsBadInput) {
  const cv::Mat img = uniform_bgr(8, 8, {0, 0, 0});
  EXPECT_THAT(test::Call([&] {
                (void)draw_sampling_points(img, Tensor::zeros({2, 2}), Tensor::zeros({2, 9}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "draw_sampling_points: tensor 'positions' expected [P, K, 2], got [2, 9]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)draw_sampling_points(img, Tensor::zeros({3, 2}), Tensor::zeros({2, 9, 2}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'centers' expected shape [2, 2], got [3, 2]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)draw_sampling_points(img, Tensor::zeros({2, 2}), Tensor::zeros({2, 9, 2}),
                                   SamplingPointsOptions().mask(Tensor::zeros({2, 3})));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'mask' expected shape [2, 9], got [2, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)draw_sampling_points(img, Tensor::zeros({1, 2}), Tensor::zeros({1, 1, 2}),
                                           SamplingPointsOptions().radius(0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("radius expected in [1, 256]")));
}

TEST(DeformSamplingPositions, FollowsTheTorchvisionLayout) {
  // docs/modules.md 10.1 worked example: 3x3 kernel, padding 1, output (1, 1); channel 0 (tap 0 dy)
  // = +0.5 and channel 9 (tap 4 dx) = +1.
  Tensor offset = Tensor::zeros({1, 18, 3, 3});
  offset[(0 * 3 + 1) * 3 + 1] = 0.5f;
  offset[(9 * 3 + 1) * 3 + 1] = 1.0f;
  const Tensor p = deform_sampling_positions(offset, {cv::Point(1, 1)});
  ASSERT_EQ(p.shape(), (Shape{1, 9, 2}));
  EXPECT_FLOAT_EQ(p[0], 0.5f);  // tap 0: (0 + 0.5, 0)
  EXPECT_FLOAT_EQ(p[1], 0.0f);
  EXPECT_FLOAT_EQ(p[8], 1.0f);  // tap 4 (centre): (1, 1 + 1)
  EXPECT_FLOAT_EQ(p[9], 2.0f);
  EXPECT_FLOAT_EQ(p[16], 2.0f);  // tap 8: (2, 2)
  EXPECT_FLOAT_EQ(p[17], 2.0f);
}

TEST(DeformSamplingPositions, StrideDilationGroupsAndSamples) {
  // Two offset groups, 1x2 kernel (K = 2), stride 2, dilation 3, padding 0; sample 1, group 1.
  Tensor offset = Tensor::zeros({2, 8, 2, 2});
  // group 1 channels 4..7: tap 0 (dy, dx) = channels 4, 5; tap 1 = channels 6, 7.
  offset[((1 * 8 + 7) * 2 + 1) * 2 + 0] = -0.25f;  // tap 1 dx at output (y 1, x 0)
  const Tensor p = deform_sampling_positions(offset, {cv::Point(0, 1), cv::Point(1, 0)},
                                             DeformSamplingOptions()
                                                 .kernel_size({1, 2})
                                                 .stride(2)
                                                 .dilation(3)
                                                 .padding(0)
                                                 .sample(1)
                                                 .offset_group(1));
  ASSERT_EQ(p.shape(), (Shape{2, 2, 2}));
  EXPECT_FLOAT_EQ(p[0], 2.0f);  // output (y 1, x 0), tap 0: y = 1*2
  EXPECT_FLOAT_EQ(p[1], 0.0f);  // x = 0
  EXPECT_FLOAT_EQ(p[2], 2.0f);  // tap 1: x = 0 + 3 - 0.25
  EXPECT_FLOAT_EQ(p[3], 2.75f);
  EXPECT_FLOAT_EQ(p[6], 0.0f);  // output (y 0, x 1), tap 1: y 0, x 2 + 3
  EXPECT_FLOAT_EQ(p[7], 5.0f);
}

TEST(DeformSamplingPositions, RejectsBadInput) {
  const Tensor offset = Tensor::zeros({1, 18, 3, 3});
  EXPECT_THAT(
      test::Call([&] {
        (void)deform_sampling_positions(Tensor::zeros({1, 17, 3, 3}), {{0, 0}});
      }),
      ThrowsMessage<ShapeError>(HasSubstr("expected [N, 2*G*9, Ho, Wo], got [1, 17, 3, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)deform_sampling_positions(offset, {{3, 0}});
              }),
              ThrowsMessage<ValueError>(HasSubstr("output pixel (x=3, y=0) outside the 3x3")));
  EXPECT_THAT(test::Call([&] { (void)deform_sampling_positions(offset, {}); }),
              ThrowsMessage<ValueError>(HasSubstr("no output pixels")));
  EXPECT_THAT(
      test::Call([&] {
        (void)deform_sampling_positions(offset, {{0, 0}}, DeformSamplingOptions().offset_group(1));
      }),
      ThrowsMessage<ValueError>(HasSubstr("offset_group 1 out of range for 1 groups")));
  EXPECT_THAT(test::Call([&] {
                (void)deform_sampling_positions(Tensor::zeros({18, 3, 3}), {{0, 0}});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("offset")));
}

// ---- query_overlay ----------------------------------------------------------------------------

TEST(QueryOverlay, ShowsTheQueryRowAtTheRightPlace) {
  // 3x4 feature map (L = 12). Query (x 1, y 2) = index 9 attends only to key (y 0, x 3).
  Tensor attn = Tensor::zeros({2, 12, 12});
  attn[(1 * 12 + 9) * 12 + 3] = 1.0f;   // sample 1
  attn[(1 * 12 + 0) * 12 + 11] = 1.0f;  // another query, must not show
  const cv::Mat img = uniform_bgr(30, 40, {0, 0, 0});
  const cv::Mat out = query_overlay(img, attn, cv::Point(1, 2), cv::Size(4, 3),
                                    QueryOverlayOptions().alpha(1.0).sample(1).marker_size(5));
  ASSERT_EQ(out.size(), cv::Size(40, 30));
  // Key (y 0, x 3) covers image rows 0..9, columns 30..39.
  EXPECT_EQ(out.at<cv::Vec3b>(2, 38), kTurbo255);
  EXPECT_EQ(out.at<cv::Vec3b>(28, 38), kTurbo0);  // key (2, 3), attention 0
  // The marker at the query's centre: image (x 15 - 0.5, y 25 - 0.5) -> pixel (14 or 15, 24/25).
  // The marker at the query's centre: image (x 14.5, y 24.5), drawn at pixel (x 15, y 25).
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(25, 15), cv::Vec3b(255, 255, 255)));
  EXPECT_TRUE(near_colour(out.at<cv::Vec3b>(25, 14), cv::Vec3b(255, 255, 255), 30));
}

TEST(QueryOverlay, AcceptsUnbatchedMaps) {
  Tensor attn = Tensor::zeros({4, 4});
  attn[0 * 4 + 2] = 1.0f;  // query 0 -> key (1, 0)
  const cv::Mat img = uniform_bgr(20, 20, {0, 0, 0});
  const cv::Mat out = query_overlay(img, attn, cv::Point(0, 0), cv::Size(2, 2),
                                    QueryOverlayOptions().alpha(1.0).marker_size(3));
  EXPECT_EQ(out.at<cv::Vec3b>(17, 2), kTurbo255);
  EXPECT_EQ(out.at<cv::Vec3b>(17, 17), kTurbo0);
}

TEST(QueryOverlay, RejectsBadInput) {
  const cv::Mat img = uniform_bgr(8, 8, {0, 0, 0});
  EXPECT_THAT(
      test::Call([&] {
        (void)query_overlay(img, Tensor::zeros({1, 12, 12}), {0, 0}, cv::Size(3, 3));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("query_overlay: tensor 'attention' expected [N, 9, 9] "
                                          "or [9, 9] for a 3x3 feature map, got [1, 12, 12]")));
  EXPECT_THAT(test::Call([&] {
                (void)query_overlay(img, Tensor::zeros({9, 9}), {3, 0}, cv::Size(3, 3));
              }),
              ThrowsMessage<ValueError>(HasSubstr("query (x=3, y=0) outside the 3x3")));
  EXPECT_THAT(test::Call([&] {
                (void)query_overlay(img, Tensor::zeros({9, 9}), {0, 0}, cv::Size(0, 3));
              }),
              ThrowsMessage<ValueError>(HasSubstr("feature_size expected positive")));
  EXPECT_THAT(test::Call([&] {
                (void)query_overlay(img, Tensor::zeros({2, 9, 9}), {0, 0}, cv::Size(3, 3),
                                    QueryOverlayOptions().sample(-1));
              }),
              ThrowsMessage<ValueError>(HasSubstr("sample -1 out of range")));
  EXPECT_THAT(test::Call([&] {
                (void)query_overlay(cv::Mat(), Tensor::zeros({9, 9}), {0, 0}, cv::Size(3, 3));
              }),
              ThrowsMessage<ValueError>(HasSubstr("the image is empty")));
}

// ---- contact_sheet ----------------------------------------------------------------------------

TEST(ContactSheet, SizeIsColumnsTimesRowsOfCells) {
  const std::vector<Panel> panels = {
      {"a", uniform_bgr(10, 20, {0, 0, 255})},
      {"b", cv::Mat(30, 10, CV_8U, cv::Scalar(128))},
      {"c", uniform_bgr(5, 5, {255, 0, 0})},
      {"d", cv::Mat(8, 8, CV_8UC4, cv::Scalar(0, 255, 0, 255))},
  };
  const cv::Mat sheet =
      contact_sheet(panels, 3, ContactSheetOptions().cell_size(cv::Size(40, 30)).label_height(10));
  EXPECT_EQ(sheet.size(), cv::Size(3 * 40, 2 * (30 + 10)));
  EXPECT_EQ(sheet.type(), CV_8UC3);
  // Auto cell = the largest panel (20 wide, 30 tall); 4 columns -> one row.
  const cv::Mat auto_sheet = contact_sheet(panels, 4, ContactSheetOptions().label_height(0));
  EXPECT_EQ(auto_sheet.size(), cv::Size(4 * 20, 30));
}

TEST(ContactSheet, LetterboxesKeepingAspect) {
  // A 10 wide x 20 tall red panel in a 40x30 cell: scale 1.5 -> 15x30, centred at x 12..26.
  const cv::Scalar bg(32, 32, 32);
  const cv::Mat sheet = contact_sheet({{"", uniform_bgr(20, 10, {0, 0, 255})}}, 1,
                                      ContactSheetOptions().cell_size({40, 30}).label_height(0));
  ASSERT_EQ(sheet.size(), cv::Size(40, 30));
  EXPECT_EQ(sheet.at<cv::Vec3b>(15, 19), cv::Vec3b(0, 0, 255));
  EXPECT_EQ(sheet.at<cv::Vec3b>(0, 12), cv::Vec3b(0, 0, 255));
  EXPECT_EQ(sheet.at<cv::Vec3b>(29, 26), cv::Vec3b(0, 0, 255));
  EXPECT_EQ(sheet.at<cv::Vec3b>(15, 5), cv::Vec3b(32, 32, 32));
  EXPECT_EQ(sheet.at<cv::Vec3b>(15, 35), cv::Vec3b(32, 32, 32));
  // A panel in the second cell of a 2-column sheet lands in the right half.
  const cv::Mat two =
      contact_sheet({{"", uniform_bgr(4, 4, {0, 0, 0})}, {"", uniform_bgr(4, 4, {255, 255, 255})}},
                    2, ContactSheetOptions().cell_size({8, 8}).label_height(0));
  EXPECT_EQ(two.at<cv::Vec3b>(4, 2), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(two.at<cv::Vec3b>(4, 12), cv::Vec3b(255, 255, 255));
  (void)bg;
}

TEST(ContactSheet, LabelsAreWrittenUnderTheirPanel) {
  const std::vector<Panel> panels = {{"spatial attention", uniform_bgr(40, 40, {0, 0, 0})},
                                     {"", uniform_bgr(40, 40, {0, 0, 0})}};
  const cv::Mat sheet = contact_sheet(panels, 2, ContactSheetOptions().label_height(20));
  const cv::Mat strip0 = sheet(cv::Rect(0, 40, 40, 20));
  const cv::Mat strip1 = sheet(cv::Rect(40, 40, 40, 20));
  cv::Mat gray;
  cv::cvtColor(strip0, gray, cv::COLOR_BGR2GRAY);
  EXPECT_GT(cv::countNonZero(gray > 128), 5);                       // white text (shrunk to fit)
  EXPECT_EQ(count_colour(strip1, cv::Vec3b(32, 32, 32)), 40 * 20);  // no label, background
}

TEST(ContactSheet, RejectsBadInput) {
  EXPECT_THAT(test::Call([] { (void)contact_sheet({}, 2); }),
              ThrowsMessage<ValueError>(HasSubstr("contact_sheet: no panels")));
  const std::vector<Panel> ok = {{"x", uniform_bgr(4, 4, {0, 0, 0})}};
  EXPECT_THAT(test::Call([&] { (void)contact_sheet(ok, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("columns expected >= 1, got 0")));
  EXPECT_THAT(
      test::Call([] {
        (void)contact_sheet({{"x", uniform_bgr(4, 4, {0, 0, 0})}, {"bad", cv::Mat()}}, 2);
      }),
      ThrowsMessage<ValueError>(HasSubstr("contact_sheet: panel 1 ('bad'): the image is empty")));
  EXPECT_THAT(test::Call([&] {
                (void)contact_sheet(ok, 1, ContactSheetOptions().cell_size({100000, 100000}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("exceeds 65536 pixels per side")));
  EXPECT_THAT(test::Call([&] {
                (void)contact_sheet(ok, 1, ContactSheetOptions().cell_size({5, 0}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("cell_size expected positive or empty")));
}

}  // namespace
}  // namespace cvattn::viz
