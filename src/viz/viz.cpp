#include "cvattn/viz/viz.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <utility>

#include "cvattn/core/error.hpp"

namespace cvattn::viz {
namespace {

constexpr std::array<const char*, 22> kColormapNames = {
    "autumn", "bone",     "jet",     "winter",   "rainbow",
    "ocean",  "summer",   "spring",  "cool",     "hsv",
    "pink",   "hot",      "parula",  "magma",    "inferno",
    "plasma", "viridis",  "cividis", "twilight", "twilight_shifted",
    "turbo",  "deepgreen"};

// Sub-pixel drawing: OpenCV takes fixed-point coordinates with this many fractional bits.
constexpr int kShift = 4;
constexpr double kShiftScale = 1 << kShift;
// Coordinates are clamped to this before drawing so a huge value cannot overflow an int; lines
// that far away are clipped by OpenCV anyway.
constexpr double kFarAway = 1 << 20;

struct Norm {
  Normalization mode;
  double low;
  double high;
  cv::ColormapTypes colormap;
};

void check_colormap(cv::ColormapTypes colormap, const char* where) {
  const int c = static_cast<int>(colormap);
  CVATTN_CHECK(c >= 0 && c < static_cast<int>(kColormapNames.size()), ValueError, where,
               ": colormap ", c, " is not a cv::ColormapTypes value");
}

void check_norm(const Norm& norm, const char* where) {
  check_colormap(norm.colormap, where);
  switch (norm.mode) {
    case Normalization::min_max:
      break;
    case Normalization::percentile:
      CVATTN_CHECK(norm.low >= 0 && norm.low <= norm.high && norm.high <= 100, ValueError, where,
                   ": percentiles expected 0 <= low <= high <= 100, got [", norm.low, ", ",
                   norm.high, "]");
      break;
    case Normalization::fixed:
      CVATTN_CHECK(std::isfinite(norm.low) && std::isfinite(norm.high) && norm.low < norm.high,
                   ValueError, where, ": fixed range expected finite low < high, got [", norm.low,
                   ", ", norm.high, "]");
      break;
    default:
      throw ValueError(
          detail::concat(where, ": unknown normalization ", static_cast<int>(norm.mode)));
  }
}

void check_alpha(double alpha, const char* where) {
  CVATTN_CHECK(alpha >= 0.0 && alpha <= 1.0, ValueError, where, ": alpha expected in [0, 1], got ",
               alpha);
}

// A canvas cvattn is about to allocate: positive sides, within the allocation cap.
void check_canvas(cv::Size size, const char* where) {
  CVATTN_CHECK(size.width > 0 && size.height > 0, ValueError, where,
               ": image size expected positive, got ", size.width, "x", size.height);
  CVATTN_CHECK(
      static_cast<double>(size.width) * size.height * 3 <= static_cast<double>(max_tensor_bytes()),
      ValueError, where, ": a ", size.width, "x", size.height,
      " image exceeds the allocation cap of ", max_tensor_bytes(), " bytes");
}

// Any 8-bit 1/3/4-channel 2-D image -> a new BGR CV_8UC3 image.
cv::Mat to_bgr(const cv::Mat& m, const char* where) {
  CVATTN_CHECK(!m.empty(), ValueError, where, ": the image is empty");
  CVATTN_CHECK(m.dims == 2, ShapeError, where, ": expected a 2-D image, got ", m.dims, " dims");
  CVATTN_CHECK(m.depth() == CV_8U, ValueError, where,
               ": expected an 8-bit image (CV_8U), got depth ", m.depth());
  cv::Mat out;
  switch (m.channels()) {
    case 1:
      cv::cvtColor(m, out, cv::COLOR_GRAY2BGR);
      break;
    case 3:
      out = m.clone();
      break;
    case 4:
      cv::cvtColor(m, out, cv::COLOR_BGRA2BGR);
      break;
    default:
      throw ValueError(detail::concat(where, ": expected 1, 3 or 4 channels, got ", m.channels()));
  }
  return out;
}

cv::Mat to_bgr(cv::InputArray image, const char* where) {
  CVATTN_CHECK(!image.empty(), ValueError, where, ": the image is empty");
  // Only single images: a vector of Mats and the like would make getMat() throw cv::Exception.
  CVATTN_CHECK(image.isMat() || image.isUMat() || image.kind() == cv::_InputArray::MATX ||
                   image.kind() == cv::_InputArray::EXPR,
               ValueError, where, ": expected a single image (cv::Mat or cv::UMat)");
  return to_bgr(image.getMat(), where);
}

int to_int_side(std::int64_t v, const char* what, const char* where) {
  CVATTN_CHECK(v >= 1 && v <= std::numeric_limits<int>::max(), ShapeError, where, ": ", what, " ",
               v, " out of range");
  return static_cast<int>(v);
}

void check_sample(std::int64_t sample, std::int64_t n, const Tensor& t, const char* name,
                  const char* where) {
  CVATTN_CHECK(sample >= 0 && sample < n, ValueError, where, ": sample ", sample,
               " out of range for tensor '", name, "' ", to_string(t.shape()));
}

// Owned CV_32F copy of the 2-D plane a map tensor denotes.
cv::Mat map_plane(const Tensor& map, std::int64_t sample, const char* where) {
  check_defined(map, "map", where);
  const Shape& s = map.shape();
  std::int64_t n = 1, h = 0, w = 0;
  if (map.rank() == 2) {
    h = s[0], w = s[1];
  } else if (map.rank() == 3) {
    n = s[0], h = s[1], w = s[2];
  } else if (map.rank() == 4 && s[1] == 1) {
    n = s[0], h = s[2], w = s[3];
  } else {
    throw ShapeError(detail::concat(where, ": tensor 'map' expected [H, W], [N, H, W] or ",
                                    "[N, 1, H, W], got ", to_string(s)));
  }
  CVATTN_CHECK(h > 0 && w > 0 && n > 0, ShapeError, where,
               ": tensor 'map' expected a non-empty map, got ", to_string(s));
  if (map.rank() > 2) check_sample(sample, n, map, "map", where);
  const int hi = to_int_side(h, "map height", where);
  const int wi = to_int_side(w, "map width", where);
  const float* p = map.data() + sample * h * w;
  return cv::Mat(hi, wi, CV_32F, const_cast<float*>(p)).clone();
}

cv::Mat mat_plane(const cv::Mat& map, const char* where) {
  CVATTN_CHECK(!map.empty(), ValueError, where, ": the map is empty");
  CVATTN_CHECK(map.dims == 2 && map.channels() == 1, ShapeError, where,
               ": expected a single-channel 2-D map, got ", map.dims, " dims and ", map.channels(),
               " channels");
  cv::Mat out;
  map.convertTo(out, CV_32F);
  return out;
}

// numpy's default ('linear') percentile of values (destroys their order).
double percentile(std::vector<float>& values, double q) {
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(i);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values.end());
  const double a = values[i];
  if (frac == 0.0 || i + 1 >= values.size()) return a;
  const double b =
      *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(i) + 1, values.end());
  return a + (b - a) * frac;
}

// CV_32F map -> CV_32F in [0, 1]; NaN and -inf -> 0, +inf -> 1.
cv::Mat normalise(const cv::Mat& m, const Norm& norm) {
  const cv::Mat finite = cv::abs(m) <= FLT_MAX;  // false for NaN and +-inf
  double lo = 0.0, hi = 0.0;
  const int count = cv::countNonZero(finite);
  if (norm.mode == Normalization::fixed) {
    lo = norm.low, hi = norm.high;
  } else if (count > 0 && norm.mode == Normalization::min_max) {
    cv::minMaxLoc(m, &lo, &hi, nullptr, nullptr, finite);
  } else if (count > 0) {
    std::vector<float> values;
    values.reserve(static_cast<std::size_t>(count));
    for (int y = 0; y < m.rows; ++y) {
      const float* row = m.ptr<float>(y);
      const uchar* ok = finite.ptr<uchar>(y);
      for (int x = 0; x < m.cols; ++x) {
        if (ok[x]) values.push_back(row[x]);
      }
    }
    lo = percentile(values, norm.low);
    hi = percentile(values, norm.high);
  }
  const double scale = hi > lo ? 1.0 / (hi - lo) : 0.0;
  cv::Mat out;
  m.convertTo(out, CV_32F, scale, -lo * scale);
  out.setTo(0.0f, ~finite);
  out.setTo(1.0f, m > FLT_MAX);  // +inf
  cv::min(out, 1.0, out);
  cv::max(out, 0.0, out);
  return out;
}

// Normalised CV_32F plane -> BGR heat map of `size`.
cv::Mat colourise(const cv::Mat& plane, cv::Size size, const Norm& norm, const char* where) {
  check_norm(norm, where);
  if (size.width == 0 && size.height == 0) size = plane.size();
  check_canvas(size, where);
  cv::Mat unit = normalise(plane, norm);
  if (unit.size() != size) {
    cv::Mat up;
    cv::resize(unit, up, size, 0, 0, cv::INTER_LINEAR);
    unit = up;
  }
  cv::Mat u8, out;
  unit.convertTo(u8, CV_8U, 255.0);
  cv::applyColorMap(u8, out, norm.colormap);
  return out;
}

cv::Mat blend(const cv::Mat& bgr, const cv::Mat& heat, double alpha) {
  cv::Mat out;
  cv::addWeighted(bgr, 1.0 - alpha, heat, alpha, 0.0, out);
  return out;
}

// 256 colours of a colour map, indexed by value.
cv::Mat colormap_lut(cv::ColormapTypes colormap) {
  cv::Mat ramp(1, 256, CV_8U);
  for (int i = 0; i < 256; ++i) ramp.at<uchar>(0, i) = static_cast<uchar>(i);
  cv::Mat lut;
  cv::applyColorMap(ramp, lut, colormap);
  return lut;
}

cv::Scalar lut_colour(const cv::Mat& lut, double unit) {
  const double u = std::isfinite(unit) ? std::clamp(unit, 0.0, 1.0) : 0.0;
  const cv::Vec3b c = lut.at<cv::Vec3b>(0, static_cast<int>(std::lround(u * 255.0)));
  return cv::Scalar(c[0], c[1], c[2]);
}

bool finite2(double x, double y) { return std::isfinite(x) && std::isfinite(y); }

cv::Point fixed_point(double x, double y) {
  x = std::clamp(x, -kFarAway, kFarAway);
  y = std::clamp(y, -kFarAway, kFarAway);
  return {static_cast<int>(std::lround(x * kShiftScale)),
          static_cast<int>(std::lround(y * kShiftScale))};
}

// grid_sample's unnormalisation of a normalised coordinate onto an axis of `size` pixels.
double unnormalise(double g, int size, bool align_corners) {
  return align_corners ? (g + 1.0) / 2.0 * (size - 1) : ((g + 1.0) * size - 1.0) / 2.0;
}

// Pixel centre (y, x) of a map of `from` size in an image of `to` size, as cv::resize maps them.
cv::Point2d map_point(double y, double x, cv::Size from, cv::Size to) {
  if (from.empty()) return {x, y};
  const double sx = static_cast<double>(to.width) / from.width;
  const double sy = static_cast<double>(to.height) / from.height;
  return {(x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5};
}

void draw_marker(cv::Mat& img, cv::Point2d at, const cv::Scalar& colour, int size) {
  if (!finite2(at.x, at.y)) return;
  const cv::Point p(static_cast<int>(std::lround(std::clamp(at.x, -kFarAway, kFarAway))),
                    static_cast<int>(std::lround(std::clamp(at.y, -kFarAway, kFarAway))));
  cv::drawMarker(img, p, cv::Scalar(0, 0, 0), cv::MARKER_CROSS, size, 3, cv::LINE_AA);
  cv::drawMarker(img, p, colour, cv::MARKER_CROSS, size, 1, cv::LINE_AA);
}

// A polyline through points, broken wherever a point is missing (non-finite).
void draw_polyline(cv::Mat& img, const std::vector<cv::Point2d>& pts, bool closed,
                   const cv::Scalar& colour, int thickness) {
  std::vector<std::vector<cv::Point>> runs(1);
  bool all_finite = true;
  for (const auto& p : pts) {
    if (finite2(p.x, p.y)) {
      runs.back().push_back(fixed_point(p.x, p.y));
    } else {
      all_finite = false;
      if (!runs.back().empty()) runs.emplace_back();
    }
  }
  // A closed outline whose break is not at the start joins its last run to its first.
  if (closed && !all_finite && runs.size() > 1 && finite2(pts.front().x, pts.front().y) &&
      finite2(pts.back().x, pts.back().y)) {
    runs.back().insert(runs.back().end(), runs.front().begin(), runs.front().end());
    runs.erase(runs.begin());
  }
  for (const auto& run : runs) {
    if (run.size() == 1) {
      cv::circle(img, run[0], std::max(1, thickness) << kShift >> 1, colour, cv::FILLED,
                 cv::LINE_AA, kShift);
    } else if (run.size() > 1) {
      cv::polylines(img, run, closed && all_finite, colour, thickness, cv::LINE_AA, kShift);
    }
  }
}

// The smallest of 1, 2, 2.5, 5 times a power of ten that is >= v (v > 0), for readable axes.
double nice_ceil(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= v * (1 - 1e-9)) return m * p;
  }
  return v;
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Largest font scale <= start at which text fits max_width; then the text is shortened with "..".
std::pair<std::string, double> fit_text(std::string text, double start, int max_width, int font) {
  double scale = start;
  int baseline = 0;
  while (scale > 0.3 && cv::getTextSize(text, font, scale, 1, &baseline).width > max_width) {
    scale -= 0.05;
  }
  std::string stem = text;
  while (!stem.empty() && cv::getTextSize(text, font, scale, 1, &baseline).width > max_width) {
    stem.pop_back();
    text = stem + "..";
  }
  return {text, scale};
}

}  // namespace

// ------------------------------------------------------------------------------------------

Normalization parse_normalization(const std::string& word) {
  if (word == "min_max") return Normalization::min_max;
  if (word == "percentile") return Normalization::percentile;
  if (word == "fixed") return Normalization::fixed;
  throw ValueError("parse_normalization: unknown normalization '" + word +
                   "'; expected min_max, percentile or fixed");
}

cv::ColormapTypes parse_colormap(const std::string& word) {
  for (std::size_t i = 0; i < kColormapNames.size(); ++i) {
    if (word == kColormapNames[i]) return static_cast<cv::ColormapTypes>(i);
  }
  std::string names;
  for (const char* n : kColormapNames) names += std::string(names.empty() ? "" : ", ") + n;
  throw ValueError("parse_colormap: unknown colormap '" + word + "'; expected one of " + names);
}

HeatmapOptions& HeatmapOptions::range(double lo, double hi) {
  normalization_ = Normalization::fixed, low_ = lo, high_ = hi;
  return *this;
}
HeatmapOptions& HeatmapOptions::percentiles(double lo, double hi) {
  normalization_ = Normalization::percentile, low_ = lo, high_ = hi;
  return *this;
}
OverlayOptions& OverlayOptions::range(double lo, double hi) {
  normalization_ = Normalization::fixed, low_ = lo, high_ = hi;
  return *this;
}
OverlayOptions& OverlayOptions::percentiles(double lo, double hi) {
  normalization_ = Normalization::percentile, low_ = lo, high_ = hi;
  return *this;
}
HeatmapOptions OverlayOptions::heatmap() const {
  return HeatmapOptions()
      .colormap(colormap_)
      .normalization(normalization_)
      .low(low_)
      .high(high_)
      .sample(sample_);
}
QueryOverlayOptions& QueryOverlayOptions::range(double lo, double hi) {
  normalization_ = Normalization::fixed, low_ = lo, high_ = hi;
  return *this;
}

cv::Mat heatmap(const Tensor& map, cv::Size size, const HeatmapOptions& o) {
  const Norm norm{o.normalization(), o.low(), o.high(), o.colormap()};
  check_norm(norm, "heatmap");
  return colourise(map_plane(map, o.sample(), "heatmap"), size, norm, "heatmap");
}

cv::Mat heatmap(const cv::Mat& map, cv::Size size, const HeatmapOptions& o) {
  const Norm norm{o.normalization(), o.low(), o.high(), o.colormap()};
  check_norm(norm, "heatmap");
  return colourise(mat_plane(map, "heatmap"), size, norm, "heatmap");
}

cv::Mat overlay(cv::InputArray image, const Tensor& map, const OverlayOptions& o) {
  check_alpha(o.alpha(), "overlay");
  const Norm norm{o.normalization(), o.low(), o.high(), o.colormap()};
  check_norm(norm, "overlay");
  const cv::Mat bgr = to_bgr(image, "overlay");
  const cv::Mat heat =
      colourise(map_plane(map, o.sample(), "overlay"), bgr.size(), norm, "overlay");
  return blend(bgr, heat, o.alpha());
}

cv::Mat overlay(cv::InputArray image, const cv::Mat& map, const OverlayOptions& o) {
  check_alpha(o.alpha(), "overlay");
  const Norm norm{o.normalization(), o.low(), o.high(), o.colormap()};
  check_norm(norm, "overlay");
  const cv::Mat bgr = to_bgr(image, "overlay");
  const cv::Mat heat = colourise(mat_plane(map, "overlay"), bgr.size(), norm, "overlay");
  return blend(bgr, heat, o.alpha());
}

cv::Mat bar_chart(const Tensor& weights, const BarChartOptions& o) {
  constexpr const char* where = "bar_chart";
  check_defined(weights, "weights", where);
  CVATTN_CHECK(weights.rank() == 1 || weights.rank() == 2, ShapeError, where,
               ": tensor 'weights' expected [C] or [N, C], got ", to_string(weights.shape()));
  const std::int64_t c = weights.dim(-1);
  CVATTN_CHECK(c > 0, ShapeError, where, ": tensor 'weights' expected C >= 1, got ",
               to_string(weights.shape()));
  std::int64_t sample = 0;
  if (weights.rank() == 2) {
    check_sample(o.sample(), weights.dim(0), weights, "weights", where);
    sample = o.sample();
  }
  CVATTN_CHECK(o.labels().empty() || static_cast<std::int64_t>(o.labels().size()) == c, ValueError,
               where, ": expected ", c, " labels (one per channel), got ", o.labels().size());
  CVATTN_CHECK(o.top_k() >= 0, ValueError, where, ": top_k expected >= 0, got ", o.top_k());
  CVATTN_CHECK(o.size().width >= 64 && o.size().height >= 64, ValueError, where,
               ": size expected at least 64x64, got ", o.size().width, "x", o.size().height);
  check_canvas(o.size(), where);
  check_colormap(o.colormap(), where);
  const bool auto_range = o.y_min() == o.y_max();
  CVATTN_CHECK(
      auto_range || (std::isfinite(o.y_min()) && std::isfinite(o.y_max()) && o.y_min() < o.y_max()),
      ValueError, where, ": value axis expected finite y_min < y_max, got [", o.y_min(), ", ",
      o.y_max(), "]");

  const float* w = weights.data() + sample * c;
  auto value = [&](std::int64_t i) {  // NaN draws as an empty bar
    const double v = w[i];
    return std::isnan(v) ? 0.0 : v;
  };
  std::vector<std::int64_t> order(static_cast<std::size_t>(c));
  for (std::int64_t i = 0; i < c; ++i) order[static_cast<std::size_t>(i)] = i;
  if (o.top_k() > 0) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return value(a) > value(b); });
    order.resize(static_cast<std::size_t>(std::min<std::int64_t>(o.top_k(), c)));
  }
  double lo = o.y_min(), hi = o.y_max();
  if (auto_range) {
    lo = 0.0, hi = 0.0;
    for (auto i : order) {
      const double v = value(i);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    if (hi > 0) hi = nice_ceil(hi);
    if (lo < 0) lo = -nice_ceil(-lo);
    if (hi <= lo) hi = lo + 1.0;
  }

  const cv::Size size = o.size();
  cv::Mat img(size, CV_8UC3, cv::Scalar(255, 255, 255));
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  const int title_h = o.title().empty() ? 0 : 24;
  const int left = 48, right = 8, top = 8 + title_h, bottom = 22;
  const int pw = std::max(1, size.width - left - right);
  const int ph = std::max(1, size.height - top - bottom);
  auto ypix = [&](double v) {
    v = std::clamp(v, lo, hi);
    return top + static_cast<int>(std::lround((hi - v) / (hi - lo) * ph));
  };
  const int base = ypix(0.0);
  const cv::Mat lut = colormap_lut(o.colormap());
  const auto k = static_cast<int>(order.size());
  const double slot = static_cast<double>(pw) / k;
  const double gap = slot >= 4 ? slot * 0.15 : 0.0;

  // Labels: every m-th one so that they do not overlap.
  std::vector<std::string> labels;
  int widest = 1, baseline = 0;
  for (auto i : order) {
    labels.push_back(o.labels().empty() ? std::to_string(i)
                                        : o.labels()[static_cast<std::size_t>(i)]);
    widest = std::max(widest, cv::getTextSize(labels.back(), font, 0.35, 1, &baseline).width);
  }
  const int every = std::max(1, static_cast<int>(std::ceil((widest + 4) / slot)));

  for (int b = 0; b < k; ++b) {
    const double v = value(order[static_cast<std::size_t>(b)]);
    const int x0 = left + static_cast<int>(std::lround(b * slot + gap));
    const int x1 = std::max(x0 + 1, left + static_cast<int>(std::lround((b + 1) * slot - gap)));
    const int y = ypix(v);
    if (y != base) {
      cv::rectangle(img, cv::Point(x0, std::min(y, base)), cv::Point(x1 - 1, std::max(y, base)),
                    lut_colour(lut, (v - lo) / (hi - lo)), cv::FILLED);
    }
    if (b % every == 0) {
      const std::string& text = labels[static_cast<std::size_t>(b)];
      const int tw = cv::getTextSize(text, font, 0.35, 1, &baseline).width;
      cv::putText(img, text, cv::Point((x0 + x1) / 2 - tw / 2, size.height - 7), font, 0.35,
                  cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
    }
  }
  // Axes and three ticks.
  cv::line(img, cv::Point(left - 1, top), cv::Point(left - 1, top + ph), cv::Scalar(0, 0, 0));
  cv::line(img, cv::Point(left - 1, base), cv::Point(left + pw, base), cv::Scalar(0, 0, 0));
  for (double t : {lo, (lo + hi) / 2, hi}) {
    const int y = ypix(t);
    cv::line(img, cv::Point(left - 4, y), cv::Point(left - 1, y), cv::Scalar(0, 0, 0));
    const std::string text = format_value(t);
    const int tw = cv::getTextSize(text, font, 0.35, 1, &baseline).width;
    cv::putText(img, text, cv::Point(left - 6 - tw, y + 4), font, 0.35, cv::Scalar(0, 0, 0), 1,
                cv::LINE_AA);
  }
  if (!o.title().empty()) {
    const auto [text, scale] = fit_text(o.title(), 0.5, size.width - 8, font);
    const int tw = cv::getTextSize(text, font, scale, 1, &baseline).width;
    cv::putText(img, text, cv::Point((size.width - tw) / 2, 20), font, scale, cv::Scalar(0, 0, 0),
                1, cv::LINE_AA);
  }
  return img;
}

cv::Mat draw_grid_outline(cv::InputArray image, const Tensor& grid, const GridOutlineOptions& o) {
  constexpr const char* where = "draw_grid_outline";
  check_defined(grid, "grid", where);
  CVATTN_CHECK(grid.rank() == 4 && grid.dim(3) == 2 && grid.dim(1) > 0 && grid.dim(2) > 0,
               ShapeError, where, ": tensor 'grid' expected [N, H, W, 2], got ",
               to_string(grid.shape()));
  check_sample(o.sample(), grid.dim(0), grid, "grid", where);
  CVATTN_CHECK(o.thickness() >= 1 && o.thickness() <= 64, ValueError, where,
               ": thickness expected in [1, 64], got ", o.thickness());
  CVATTN_CHECK(o.lattice() >= 0, ValueError, where, ": lattice expected >= 0, got ", o.lattice());
  cv::Mat img = to_bgr(image, where);
  const std::int64_t gh = grid.dim(1), gw = grid.dim(2);
  const float* g = grid.data() + o.sample() * gh * gw * 2;
  auto point = [&](std::int64_t h, std::int64_t w) {
    const float* p = g + (h * gw + w) * 2;
    return cv::Point2d(unnormalise(p[0], img.cols, o.align_corners()),
                       unnormalise(p[1], img.rows, o.align_corners()));
  };
  // Border, clockwise from the top-left sample.
  std::vector<cv::Point2d> border;
  for (std::int64_t w = 0; w < gw; ++w) border.push_back(point(0, w));
  for (std::int64_t h = 1; h < gh; ++h) border.push_back(point(h, gw - 1));
  if (gh > 1) {
    for (std::int64_t w = gw - 2; w >= 0; --w) border.push_back(point(gh - 1, w));
  }
  if (gw > 1) {
    for (std::int64_t h = gh - 2; h >= 1; --h) border.push_back(point(h, 0));
  }
  if (o.lattice() > 1) {
    const int n = std::min<std::int64_t>(o.lattice(), std::max(gh, gw));
    for (int r = 1; r < n; ++r) {
      std::vector<cv::Point2d> row, col;
      const auto h = static_cast<std::int64_t>(std::lround(static_cast<double>(r) * (gh - 1) / n));
      const auto w = static_cast<std::int64_t>(std::lround(static_cast<double>(r) * (gw - 1) / n));
      for (std::int64_t x = 0; x < gw; ++x) row.push_back(point(h, x));
      for (std::int64_t y = 0; y < gh; ++y) col.push_back(point(y, w));
      draw_polyline(img, row, false, o.color(), 1);
      draw_polyline(img, col, false, o.color(), 1);
    }
  }
  draw_polyline(img, border, border.size() > 2, o.color(), o.thickness());
  return img;
}

cv::Mat draw_sampling_points(cv::InputArray image, const Tensor& centers, const Tensor& positions,
                             const SamplingPointsOptions& o) {
  constexpr const char* where = "draw_sampling_points";
  check_defined(positions, "positions", where);
  check_defined(centers, "centers", where);
  CVATTN_CHECK(positions.rank() == 3 && positions.dim(2) == 2 && positions.dim(0) > 0 &&
                   positions.dim(1) > 0,
               ShapeError, where, ": tensor 'positions' expected [P, K, 2], got ",
               to_string(positions.shape()));
  const std::int64_t p_count = positions.dim(0), k_count = positions.dim(1);
  check_shape(centers, {p_count, 2}, "centers", where);
  if (o.mask().defined()) check_shape(o.mask(), {p_count, k_count}, "mask", where);
  CVATTN_CHECK(o.radius() >= 1 && o.radius() <= 256, ValueError, where,
               ": radius expected in [1, 256], got ", o.radius());
  CVATTN_CHECK(o.input_size().empty() || (o.input_size().width > 0 && o.input_size().height > 0),
               ValueError, where, ": input_size expected positive, got ", o.input_size().width, "x",
               o.input_size().height);
  check_colormap(o.colormap(), where);
  cv::Mat img = to_bgr(image, where);
  const cv::Mat lut = colormap_lut(o.colormap());
  const cv::Size from = o.input_size();
  for (std::int64_t p = 0; p < p_count; ++p) {
    const cv::Scalar colour = lut_colour(lut, static_cast<double>(p) / p_count);
    const cv::Point2d c = map_point(centers[p * 2], centers[p * 2 + 1], from, img.size());
    for (std::int64_t k = 0; k < k_count; ++k) {
      const float* t = positions.data() + (p * k_count + k) * 2;
      const cv::Point2d q = map_point(t[0], t[1], from, img.size());
      if (!finite2(q.x, q.y)) continue;
      if (o.lines() && finite2(c.x, c.y)) {
        cv::line(img, fixed_point(c.x, c.y), fixed_point(q.x, q.y), colour, 1, cv::LINE_AA, kShift);
      }
    }
    // The marker goes under the dots: the taps are what the picture is about.
    draw_marker(img, c, colour, 2 * o.radius() + 5);
    for (std::int64_t k = 0; k < k_count; ++k) {
      const float* t = positions.data() + (p * k_count + k) * 2;
      const cv::Point2d q = map_point(t[0], t[1], from, img.size());
      if (!finite2(q.x, q.y)) continue;
      double r = o.radius();
      if (o.mask().defined()) {
        const double m = o.mask()[p * k_count + k];
        r *= std::isfinite(m) ? std::clamp(m, 0.0, 1.0) : 0.0;
      }
      const int r_fixed = std::max(1 << kShift, static_cast<int>(std::lround(r * kShiftScale)));
      cv::circle(img, fixed_point(q.x, q.y), r_fixed + (1 << kShift), cv::Scalar(0, 0, 0),
                 cv::FILLED, cv::LINE_AA, kShift);
      cv::circle(img, fixed_point(q.x, q.y), r_fixed, colour, cv::FILLED, cv::LINE_AA, kShift);
    }
  }
  return img;
}

Tensor deform_sampling_positions(const Tensor& offset, const std::vector<cv::Point>& outputs,
                                 const DeformSamplingOptions& o) {
  constexpr const char* where = "deform_sampling_positions";
  const auto s = offset.nchw("offset");
  const Pair2 k = o.kernel_size(), st = o.stride(), pad = o.padding(), dil = o.dilation();
  CVATTN_CHECK(k.h > 0 && k.w > 0 && st.h > 0 && st.w > 0 && dil.h > 0 && dil.w > 0 && pad.h >= 0 &&
                   pad.w >= 0,
               ValueError, where,
               ": kernel_size, stride and dilation expected positive, padding >= 0");
  const std::int64_t taps = k.h * k.w;
  CVATTN_CHECK(s.c > 0 && s.c % (2 * taps) == 0, ShapeError, where,
               ": tensor 'offset' expected [N, 2*G*", taps, ", Ho, Wo], got ",
               to_string(offset.shape()));
  const std::int64_t groups = s.c / (2 * taps);
  CVATTN_CHECK(o.offset_group() >= 0 && o.offset_group() < groups, ValueError, where,
               ": offset_group ", o.offset_group(), " out of range for ", groups, " groups");
  check_sample(o.sample(), s.n, offset, "offset", where);
  CVATTN_CHECK(!outputs.empty(), ValueError, where, ": no output pixels given");
  for (const auto& q : outputs) {
    CVATTN_CHECK(q.x >= 0 && q.x < s.w && q.y >= 0 && q.y < s.h, ValueError, where,
                 ": output pixel (x=", q.x, ", y=", q.y, ") outside the ", s.h, "x", s.w,
                 " offset map");
  }
  const auto p_count = static_cast<std::int64_t>(outputs.size());
  Tensor out = Tensor::empty({p_count, taps, 2});
  const std::int64_t ch0 = o.offset_group() * 2 * taps;
  for (std::int64_t p = 0; p < p_count; ++p) {
    const std::int64_t oy = outputs[static_cast<std::size_t>(p)].y;
    const std::int64_t ox = outputs[static_cast<std::size_t>(p)].x;
    for (std::int64_t i = 0; i < k.h; ++i) {
      for (std::int64_t j = 0; j < k.w; ++j) {
        const std::int64_t t = i * k.w + j;
        const float dy = offset.at(o.sample(), ch0 + 2 * t, oy, ox);
        const float dx = offset.at(o.sample(), ch0 + 2 * t + 1, oy, ox);
        out[(p * taps + t) * 2] = static_cast<float>(oy * st.h - pad.h + i * dil.h) + dy;
        out[(p * taps + t) * 2 + 1] = static_cast<float>(ox * st.w - pad.w + j * dil.w) + dx;
      }
    }
  }
  return out;
}

cv::Mat query_overlay(cv::InputArray image, const Tensor& attention, cv::Point query,
                      cv::Size feature_size, const QueryOverlayOptions& o) {
  constexpr const char* where = "query_overlay";
  check_defined(attention, "attention", where);
  check_alpha(o.alpha(), where);
  const Norm norm{o.normalization(), o.low(), o.high(), o.colormap()};
  check_norm(norm, where);
  CVATTN_CHECK(feature_size.width > 0 && feature_size.height > 0, ValueError, where,
               ": feature_size expected positive, got ", feature_size.width, "x",
               feature_size.height);
  const std::int64_t hw = static_cast<std::int64_t>(feature_size.width) * feature_size.height;
  const bool batched = attention.rank() == 3;
  CVATTN_CHECK(
      (attention.rank() == 2 || batched) && attention.dim(-1) == hw && attention.dim(-2) == hw,
      ShapeError, where, ": tensor 'attention' expected [N, ", hw, ", ", hw, "] or [", hw, ", ", hw,
      "] for a ", feature_size.height, "x", feature_size.width, " feature map, got ",
      to_string(attention.shape()));
  if (batched) check_sample(o.sample(), attention.dim(0), attention, "attention", where);
  CVATTN_CHECK(
      query.x >= 0 && query.x < feature_size.width && query.y >= 0 && query.y < feature_size.height,
      ValueError, where, ": query (x=", query.x, ", y=", query.y, ") outside the ",
      feature_size.height, "x", feature_size.width, " feature map");
  CVATTN_CHECK(o.marker_size() >= 0, ValueError, where, ": marker_size expected >= 0, got ",
               o.marker_size());
  cv::Mat bgr = to_bgr(image, where);
  const std::int64_t n = batched ? o.sample() : 0;
  const float* row =
      attention.data() +
      (n * hw + static_cast<std::int64_t>(query.y) * feature_size.width + query.x) * hw;
  const cv::Mat plane =
      cv::Mat(feature_size.height, feature_size.width, CV_32F, const_cast<float*>(row)).clone();
  cv::Mat out = blend(bgr, colourise(plane, bgr.size(), norm, where), o.alpha());
  const int size =
      o.marker_size() > 0 ? o.marker_size() : std::max(7, std::min(bgr.cols, bgr.rows) / 20);
  draw_marker(out, map_point(query.y, query.x, feature_size, bgr.size()), o.marker_color(), size);
  return out;
}

cv::Mat contact_sheet(const std::vector<Panel>& panels, int columns, const ContactSheetOptions& o) {
  constexpr const char* where = "contact_sheet";
  CVATTN_CHECK(!panels.empty(), ValueError, where, ": no panels");
  CVATTN_CHECK(columns >= 1, ValueError, where, ": columns expected >= 1, got ", columns);
  CVATTN_CHECK(o.label_height() >= 0 && o.label_height() <= 1024, ValueError, where,
               ": label_height expected in [0, 1024], got ", o.label_height());
  std::vector<cv::Mat> images;
  cv::Size cell = o.cell_size();
  CVATTN_CHECK(cell.width >= 0 && cell.height >= 0 && (cell.width > 0) == (cell.height > 0),
               ValueError, where, ": cell_size expected positive or empty, got ", cell.width, "x",
               cell.height);
  const bool auto_cell = cell.empty();
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const std::string what = detail::concat(where, ": panel ", i, " ('", panels[i].label, "')");
    images.push_back(to_bgr(panels[i].image, what.c_str()));
    if (auto_cell) {
      cell.width = std::max(cell.width, images.back().cols);
      cell.height = std::max(cell.height, images.back().rows);
    }
  }
  const auto count = static_cast<int>(panels.size());
  const int rows = (count + columns - 1) / columns;
  const int row_h = cell.height + o.label_height();
  const cv::Size sheet_size(
      static_cast<int>(std::min<std::int64_t>(static_cast<std::int64_t>(columns) * cell.width,
                                              std::numeric_limits<int>::max())),
      static_cast<int>(std::min<std::int64_t>(static_cast<std::int64_t>(rows) * row_h,
                                              std::numeric_limits<int>::max())));
  CVATTN_CHECK(static_cast<std::int64_t>(columns) * cell.width <= 1 << 16 &&
                   static_cast<std::int64_t>(rows) * row_h <= 1 << 16,
               ValueError, where, ": a sheet of ", columns, " x ", rows, " cells of ", cell.width,
               "x", row_h, " exceeds 65536 pixels per side");
  check_canvas(sheet_size, where);
  cv::Mat sheet(sheet_size, CV_8UC3, o.background());
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  for (int i = 0; i < count; ++i) {
    const cv::Mat& im = images[static_cast<std::size_t>(i)];
    const int cx = (i % columns) * cell.width, cy = (i / columns) * row_h;
    const double scale = std::min(static_cast<double>(cell.width) / im.cols,
                                  static_cast<double>(cell.height) / im.rows);
    const cv::Size fit(std::clamp(static_cast<int>(std::lround(im.cols * scale)), 1, cell.width),
                       std::clamp(static_cast<int>(std::lround(im.rows * scale)), 1, cell.height));
    // Small maps stay crisp when enlarged a lot; photos are smoothed when resized a little.
    const int interp = scale >= 2.0  ? cv::INTER_NEAREST
                       : scale > 1.0 ? cv::INTER_LINEAR
                                     : cv::INTER_AREA;
    cv::Mat fitted;
    if (fit == im.size()) {
      fitted = im;
    } else {
      cv::resize(im, fitted, fit, 0, 0, interp);
    }
    fitted.copyTo(sheet(cv::Rect(cx + (cell.width - fit.width) / 2,
                                 cy + (cell.height - fit.height) / 2, fit.width, fit.height)));
    const std::string& label = panels[static_cast<std::size_t>(i)].label;
    if (o.label_height() > 0 && !label.empty()) {
      const auto [text, fs] =
          fit_text(label, std::min(0.5, o.label_height() / 40.0), cell.width - 4, font);
      int baseline = 0;
      const cv::Size ts = cv::getTextSize(text, font, fs, 1, &baseline);
      cv::putText(sheet, text,
                  cv::Point(cx + std::max(2, (cell.width - ts.width) / 2),
                            cy + cell.height + (o.label_height() + ts.height) / 2),
                  font, fs, o.text_color(), 1, cv::LINE_AA);
    }
  }
  return sheet;
}

}  // namespace cvattn::viz
