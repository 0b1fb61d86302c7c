#pragma once
// cvattn::viz: pictures of attention maps, drawn with OpenCV.
//
// Every function takes BGR images (8-bit, 1, 3 or 4 channels; gray and BGRA are converted to BGR)
// and returns a new CV_8UC3 BGR image; inputs are never modified and nothing is shown or written.
// Maps are the raw tensors modules return (core/attention_maps.hpp): viz picks the sample,
// normalises, upsamples bilinearly (cv::resize) and colours them (cv::applyColorMap, which already
// returns BGR).
//
// Non-finite map values have a defined meaning: NaN and -inf are drawn as the low end of the
// range, +inf as the high end; the normalisation statistics use the finite values only.
#include <cstdint>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::viz {

// How map values become [0, 1] before colouring.
enum class Normalization {
  min_max,     // [min, max] of the finite values; a constant map is all 0
  percentile,  // [low, high] percentiles (0..100, linear interpolation as numpy) of finite values
  fixed,       // the given [low, high], e.g. [0, 1] for sigmoid gates, so panels compare honestly
};
// "min_max", "percentile", "fixed"; ValueError on anything else.
[[nodiscard]] CVATTN_EXPORT Normalization parse_normalization(const std::string& word);
// "turbo", "jet", ... every cv::ColormapTypes name in lower case; ValueError on anything else.
[[nodiscard]] CVATTN_EXPORT cv::ColormapTypes parse_colormap(const std::string& word);

// Options shared by heatmap, overlay and query_overlay.
struct CVATTN_EXPORT HeatmapOptions {
  CVATTN_ARG(cv::ColormapTypes, colormap) = cv::COLORMAP_TURBO;
  CVATTN_ARG(Normalization, normalization) = Normalization::min_max;
  CVATTN_ARG(double, low) = 0.0;         // fixed: value drawn as 0; percentile: lower percentile
  CVATTN_ARG(double, high) = 1.0;        // fixed: value drawn as 1; percentile: upper percentile
  CVATTN_ARG(std::int64_t, sample) = 0;  // n of an [N, 1, H, W] or [N, H, W] map
 public:
  // Shorthands: fixed range [lo, hi]; percentiles [lo, hi].
  HeatmapOptions& range(double lo, double hi);
  HeatmapOptions& percentiles(double lo, double hi);
};

struct CVATTN_EXPORT OverlayOptions {
  CVATTN_ARG(double, alpha) = 0.45;  // heat-map opacity in [0, 1]; 0 returns the image
  CVATTN_ARG(cv::ColormapTypes, colormap) = cv::COLORMAP_TURBO;
  CVATTN_ARG(Normalization, normalization) = Normalization::min_max;
  CVATTN_ARG(double, low) = 0.0;
  CVATTN_ARG(double, high) = 1.0;
  CVATTN_ARG(std::int64_t, sample) = 0;

 public:
  OverlayOptions& range(double lo, double hi);
  OverlayOptions& percentiles(double lo, double hi);
  [[nodiscard]] HeatmapOptions heatmap() const;
};

// A 2-D map as [H, W], [1, H, W] / [N, H, W] or [N, 1, H, W] (sample options.sample()) -> a
// CV_8UC3 BGR colour image of `size` (0x0: the map's own size).
[[nodiscard]] CVATTN_EXPORT cv::Mat heatmap(const Tensor& map, cv::Size size = {},
                                            const HeatmapOptions& options = {});
// Same for a single-channel 2-D cv::Mat of any depth.
[[nodiscard]] CVATTN_EXPORT cv::Mat heatmap(const cv::Mat& map, cv::Size size = {},
                                            const HeatmapOptions& options = {});

// The map's heat map, upsampled to the image, alpha-blended over it:
// out = (1 - alpha) * image + alpha * heatmap.
[[nodiscard]] CVATTN_EXPORT cv::Mat overlay(cv::InputArray image, const Tensor& map,
                                            const OverlayOptions& options = {});
[[nodiscard]] CVATTN_EXPORT cv::Mat overlay(cv::InputArray image, const cv::Mat& map,
                                            const OverlayOptions& options = {});

struct CVATTN_EXPORT BarChartOptions {
  CVATTN_ARG(int, top_k) = 0;            // > 0: only the k largest weights, largest first
  CVATTN_ARG(std::int64_t, sample) = 0;  // n of an [N, C] tensor
  CVATTN_ARG(std::vector<std::string>, labels) = {};  // one per channel; empty: the index
  CVATTN_ARG(cv::Size, size) = cv::Size(640, 320);
  CVATTN_ARG(std::string, title) = "";
  // Value axis: [y_min, y_max]; y_min == y_max (default) fits [min(0, v), max(0, v)], rounded
  // out to 1, 2, 2.5 or 5 times a power of ten.
  CVATTN_ARG(double, y_min) = 0.0;
  CVATTN_ARG(double, y_max) = 0.0;
  CVATTN_ARG(cv::ColormapTypes, colormap) = cv::COLORMAP_TURBO;  // bar colour by height
};
// Channel weights [C] or [N, C] (an SE/ECA gate, CBAM's channel gate) as a bar chart on white.
[[nodiscard]] CVATTN_EXPORT cv::Mat bar_chart(const Tensor& weights,
                                              const BarChartOptions& options = {});

struct CVATTN_EXPORT GridOutlineOptions {
  CVATTN_ARG(bool, align_corners) = false;  // as passed to affine_grid / grid_sample
  CVATTN_ARG(std::int64_t, sample) = 0;
  CVATTN_ARG(cv::Scalar, color) = cv::Scalar(0, 255, 0);  // BGR
  CVATTN_ARG(int, thickness) = 1;
  CVATTN_ARG(int, lattice) = 0;  // > 1: also draw the grid as lattice x lattice cells
};
// The spatial transformer's sampling region: the border of grid [N, Ho, Wo, 2] (normalised
// (x, y) as affine_grid returns) mapped to the image's pixels with grid_sample's unnormalisation,
// as a closed polyline. Points with non-finite coordinates break the line.
[[nodiscard]] CVATTN_EXPORT cv::Mat draw_grid_outline(cv::InputArray image, const Tensor& grid,
                                                      const GridOutlineOptions& options = {});

struct CVATTN_EXPORT SamplingPointsOptions {
  // Size of the map the coordinates refer to (the deformable conv's input); empty: coordinates
  // are already image pixels. Otherwise pixel centres are mapped as cv::resize does.
  CVATTN_ARG(cv::Size, input_size) = cv::Size();
  CVATTN_ARG(Tensor, mask) = Tensor();  // optional [P, K] modulation in [0, 1]: scales the dots
  CVATTN_ARG(int, radius) = 3;
  CVATTN_ARG(bool, lines) = true;  // thin lines from each output pixel to its taps
  CVATTN_ARG(cv::ColormapTypes, colormap) = cv::COLORMAP_HSV;  // distinct colour per output pixel
};
// Deformable-convolution sampling points, DCN-paper style: for each of P chosen output pixels,
// a cross at centers[p] = (y, x) and a dot at each of its K taps positions[p, k] = (y, x), all in
// input-pixel coordinates; one colour per output pixel.
[[nodiscard]] CVATTN_EXPORT cv::Mat draw_sampling_points(cv::InputArray image,
                                                         const Tensor& centers,
                                                         const Tensor& positions,
                                                         const SamplingPointsOptions& options = {});

struct CVATTN_EXPORT DeformSamplingOptions {
  CVATTN_ARG(Pair2, kernel_size) = Pair2(3);
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(1);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, sample) = 0;
  CVATTN_ARG(std::int64_t, offset_group) = 0;  // which offset group's taps
};
// The absolute sampling positions (y, x) [P, K, 2] of output pixels `outputs` (x = column,
// y = row) from a deformable conv's offset map [N, 2*G*K, Ho, Wo] (docs/modules.md 10.1 layout):
// p = (oy*sh - ph + i*dh + dy, ox*sw - pw + j*dw + dx). Feed it to draw_sampling_points together
// with the output pixels' own positions (oy*sh - ph + dh*(kh-1)/2, same for x).
[[nodiscard]] CVATTN_EXPORT Tensor
deform_sampling_positions(const Tensor& offset, const std::vector<cv::Point>& outputs,
                          const DeformSamplingOptions& options = {});

struct CVATTN_EXPORT QueryOverlayOptions {
  CVATTN_ARG(double, alpha) = 0.5;
  CVATTN_ARG(cv::ColormapTypes, colormap) = cv::COLORMAP_TURBO;
  CVATTN_ARG(Normalization, normalization) = Normalization::min_max;
  CVATTN_ARG(double, low) = 0.0;
  CVATTN_ARG(double, high) = 1.0;
  CVATTN_ARG(std::int64_t, sample) = 0;
  CVATTN_ARG(cv::Scalar, marker_color) = cv::Scalar(255, 255, 255);  // BGR
  CVATTN_ARG(int, marker_size) = 0;  // 0: about a twentieth of the image's shorter side
 public:
  QueryOverlayOptions& range(double lo, double hi);
};
// The attention row of query pixel (y, x) of an [N, H*W, H*W] or [H*W, H*W] self-attention map
// over an H x W feature map (flattened index y*W + x), reshaped to [H, W], upsampled over the
// image, with a marker at the query's position.
[[nodiscard]] CVATTN_EXPORT cv::Mat query_overlay(cv::InputArray image, const Tensor& attention,
                                                  cv::Point query, cv::Size feature_size,
                                                  const QueryOverlayOptions& options = {});

struct Panel {
  std::string label;
  cv::Mat image;  // 8-bit, 1, 3 or 4 channels
};
struct CVATTN_EXPORT ContactSheetOptions {
  CVATTN_ARG(cv::Size, cell_size) = cv::Size();  // empty: the largest panel's size
  CVATTN_ARG(int, label_height) = 24;            // strip under each cell; 0: no labels
  CVATTN_ARG(cv::Scalar, background) = cv::Scalar(32, 32, 32);
  CVATTN_ARG(cv::Scalar, text_color) = cv::Scalar(255, 255, 255);
};
// Panels in a grid of `columns` columns and ceil(n / columns) rows, each letterboxed (aspect kept,
// centred) into cell_size with its label below: the sheet is exactly
// columns * cell.width x rows * (cell.height + label_height).
[[nodiscard]] CVATTN_EXPORT cv::Mat contact_sheet(const std::vector<Panel>& panels, int columns,
                                                  const ContactSheetOptions& options = {});

}  // namespace cvattn::viz
