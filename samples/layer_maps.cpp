// layer_maps: the maps of the timm/mmcv attention layers (docs/gates.md, docs/spatial_attention.md)
// drawn on photos, one contact sheet per image:
//
//  * GlobalContext's context map (where its attention pooling looks),
//  * GatherExcite's gathered gate (extent 2, mean over channels),
//  * CoordAttn's row and column gates and their product (what multiplies the features),
//  * BottleneckAttn (BoTNet) and HaloAttn: the attention of one query pixel (--query) over the
//    whole map, and over the query's block and its halo,
//  * CondConv's routing and dynamic convolution's kernel attention for this image (bar charts,
//    also printed).
//
// The layers are UNTRAINED (weights from a fixed seed, --seed): the sheets show what each map is
// and how to draw it, not learned attention. Their input is a fixed bank of 16 image features
// (colour, Lab, gradients, Laplacian, difference of Gaussians, local contrast) at 32x32, so the
// maps still follow the image's structure. Train the layers in timm and load their state_dict
// (each module's from_state_dict) to see learned maps with the same drawing code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;
namespace viz = cvattn::viz;
using cvattn::Tensor;

namespace {

constexpr int kSide = 128;        // the square crop the layers see, in pixels
constexpr int kGrid = kSide / 4;  // feature map side
constexpr std::int64_t kChannels = 16;
constexpr int kPanel = 256;  // pixels of each picture on the sheet

// Every float tensor of `m` from `seed`: uniform(-1, 1) * sqrt(3 / fan_in) for weights of rank
// >= 2, norm scales and running variances around 1, biases and means near 0.
void seed_weights(cvattn::Module& m, std::uint32_t seed) {
  std::mt19937 gen(seed);
  const auto u = [&] { return static_cast<float>(gen()) / 4294967296.0f * 2.0f - 1.0f; };
  cvattn::StateDict dict = m.state_dict();
  cvattn::StateDict out;
  for (const auto& e : dict.entries()) {
    if (e.integer) continue;
    Tensor t = Tensor::empty(e.value.shape());
    const std::string last = e.key.substr(e.key.rfind('.') + 1);
    const bool rank1 = t.rank() == 1;
    std::int64_t fan_in = 1;
    for (std::int64_t d = 1; d < t.rank(); ++d) fan_in *= t.dim(d);
    const float scale = std::sqrt(3.0f / static_cast<float>(fan_in));
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const float v = u();
      if (last == "running_var" || (rank1 && last == "weight")) {
        t.data()[i] = 1.0f + 0.3f * v;
      } else if (rank1) {
        t.data()[i] = 0.1f * v;
      } else {
        t.data()[i] = v * scale;
      }
    }
    out.set(e.key, t);
  }
  (void)m.load_state_dict(out, cvattn::Strict::no);
}

// The centre square of the image at kSide x kSide.
cv::Mat square_crop(const cv::Mat& bgr) {
  const int side = std::min(bgr.cols, bgr.rows);
  const cv::Mat sq = bgr(cv::Rect((bgr.cols - side) / 2, (bgr.rows - side) / 2, side, side));
  cv::Mat out;
  cv::resize(sq, out, {kSide, kSide}, 0, 0, side > kSide ? cv::INTER_AREA : cv::INTER_CUBIC);
  return out;
}

// 16 standardised feature planes at kGrid x kGrid: [1, 16, kGrid, kGrid].
Tensor image_features(const cv::Mat& crop) {
  cv::Mat f, lab, grey;
  crop.convertTo(f, CV_32F, 1.0 / 255);
  cv::cvtColor(f, lab, cv::COLOR_BGR2Lab);
  cv::cvtColor(f, grey, cv::COLOR_BGR2GRAY);
  std::vector<cv::Mat> planes;
  cv::split(f, planes);  // B, G, R
  std::vector<cv::Mat> lab_planes;
  cv::split(lab, lab_planes);
  planes.insert(planes.end(), lab_planes.begin(), lab_planes.end());
  cv::Mat gx, gy, mag, lap, b1, b2, mean, sq, var;
  cv::Sobel(grey, gx, CV_32F, 1, 0, 3);
  cv::Sobel(grey, gy, CV_32F, 0, 1, 3);
  cv::magnitude(gx, gy, mag);
  cv::Laplacian(grey, lap, CV_32F, 3);
  cv::GaussianBlur(grey, b1, {0, 0}, 1.0);
  cv::GaussianBlur(grey, b2, {0, 0}, 4.0);
  cv::blur(grey, mean, {7, 7});
  cv::blur(grey.mul(grey), sq, {7, 7});
  cv::max(sq - mean.mul(mean), 0.0, var);
  cv::sqrt(var, var);
  cv::Mat abs_gx = cv::abs(gx), abs_gy = cv::abs(gy), abs_lap = cv::abs(lap);
  for (const cv::Mat& p : {gx, gy, mag, lap, cv::Mat(b1 - b2), var, abs_gx, abs_gy, abs_lap, b2}) {
    planes.push_back(p);
  }
  Tensor x = Tensor::empty({1, kChannels, kGrid, kGrid});
  for (std::int64_t c = 0; c < kChannels; ++c) {
    cv::Mat small;
    cv::resize(planes[static_cast<std::size_t>(c)], small, {kGrid, kGrid}, 0, 0, cv::INTER_AREA);
    cv::Scalar m, s;
    cv::meanStdDev(small, m, s);
    small = (small - m[0]) / std::max(s[0], 1e-6);
    float* dst = x.data() + c * kGrid * kGrid;
    for (int y = 0; y < kGrid; ++y) std::copy_n(small.ptr<float>(y), kGrid, dst + y * kGrid);
  }
  return x;
}

// Sample 0 of a map holding h*w values per sample (any shape), as [h, w].
Tensor as_plane(const Tensor& map, std::int64_t h, std::int64_t w) {
  Tensor t = Tensor::empty({h, w});
  std::copy_n(map.data(), h * w, t.data());
  return t;
}

// The channel mean of an [1, C, h, w] map.
Tensor channel_mean(const Tensor& map) {
  const std::int64_t c = map.dim(1), hw = map.dim(2) * map.dim(3);
  Tensor t = Tensor::zeros({map.dim(2), map.dim(3)});
  for (std::int64_t k = 0; k < c; ++k) {
    for (std::int64_t i = 0; i < hw; ++i)
      t.data()[i] += map.data()[k * hw + i] / static_cast<float>(c);
  }
  return t;
}

cv::Mat big(const cv::Mat& image) {
  cv::Mat out;
  cv::resize(image, out, {kPanel, kPanel}, 0, 0, cv::INTER_CUBIC);
  return out;
}

cv::Mat mark(cv::Mat image, cv::Point query) {
  const double s = static_cast<double>(kPanel) / kGrid;
  const cv::Point c(static_cast<int>((query.x + 0.5) * s), static_cast<int>((query.y + 0.5) * s));
  cv::drawMarker(image, c, cv::Scalar(255, 255, 255), cv::MARKER_CROSS, 18, 3);
  cv::drawMarker(image, c, cv::Scalar(0, 0, 0), cv::MARKER_CROSS, 14, 1);
  return image;
}

cv::Mat bars(const Tensor& weights, const std::string& title) {
  return viz::bar_chart(
      weights, viz::BarChartOptions().size({kPanel, kPanel}).title(title).y_min(0.0).y_max(1.0));
}

std::string values(const Tensor& t) {
  std::string s = "[";
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%.3f", i ? " " : "", t[i]);
    s += buf;
  }
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      std::string("{help h    |              | print this help }") +
      "{input i   | images       | image files or folders separated by ',' (relative to --assets "
      "unless they exist) }"
      "{output o  | out/layer_maps | folder for the PNGs }"
      "{query q   |              | query pixel x,y on the 32x32 feature grid (default: centre) }"
      "{seed      | 19           | seed of the untrained layers' weights }" +
      sample::assets_key() + sample::batch_keys();
  const std::string about =
      "layer_maps: the maps of GlobalContext, GatherExcite, CoordAttn, BoTNet and Halo attention, "
      "CondConv routing and dynamic convolution drawn on photos (untrained layers, seeded)";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const std::string input = parser.get<std::string>("input");
  const fs::path output = parser.get<std::string>("output");
  const std::string query_text = parser.get<std::string>("query");
  const int seed = parser.get<int>("seed");
  const std::string list = parser.get<std::string>("list");
  const std::string shard = parser.get<std::string>("shard");
  if (!parser.check()) return sample::value_errors(parser, "layer_maps");
  try {
    cv::Point query(kGrid / 2, kGrid / 2);
    if (!query_text.empty()) {
      int qx = -1, qy = -1;
      char tail = 0;
      if (std::sscanf(query_text.c_str(), "%d,%d%c", &qx, &qy, &tail) != 2 || qx < 0 || qy < 0 ||
          qx >= kGrid || qy >= kGrid) {
        throw cvattn::ValueError("--query: expected x,y with 0 <= x, y < " + std::to_string(kGrid) +
                                 ", got '" + query_text + "'");
      }
      query = {qx, qy};
    }
    auto s = static_cast<std::uint32_t>(seed);
    cvattn::GlobalContext gc(cvattn::GlobalContextOptions(kChannels).fuse_add(true));
    cvattn::GatherExcite ge(cvattn::GatherExciteOptions(kChannels).extent(2).use_mlp(true));
    cvattn::CoordAttn coord(cvattn::CoordAttnOptions(kChannels, 8));
    cvattn::BottleneckAttn bot(
        cvattn::BottleneckAttnOptions(kChannels, {kGrid, kGrid}).num_heads(2));
    cvattn::HaloAttn halo(
        cvattn::HaloAttnOptions(kChannels).num_heads(2).block_size(8).halo_size(2));
    cvattn::CondConvRouting routing(cvattn::CondConvRoutingOptions(kChannels, 4));
    cvattn::DynamicConv2d dyn(
        cvattn::DynamicConv2dOptions(kChannels, kChannels, {3, 3}).padding({1, 1}));
    for (cvattn::Module* m :
         std::initializer_list<cvattn::Module*>{&gc, &ge, &coord, &bot, &halo, &routing, &dyn}) {
      seed_weights(*m, s++);
    }

    const std::vector<fs::path> files = sample::select_inputs(input, list, shard);
    fs::create_directories(output);
    std::size_t written = 0;
    for (const fs::path& file : files) {
      const cv::Mat bgr = cv::imread(file.string(), cv::IMREAD_COLOR);
      if (bgr.empty()) throw cvattn::IoError("cannot read image " + file.string());
      const cv::Mat crop = big(square_crop(bgr));
      const Tensor x = image_features(square_crop(bgr));
      std::vector<viz::Panel> panels{{"input (32x32 features)", crop}};

      const cvattn::Attended g = gc.forward_with_maps(x);
      panels.push_back(
          {"GC context map", viz::overlay(crop, as_plane(g.maps.at("attention"), kGrid, kGrid))});
      const cvattn::Attended e = ge.forward_with_maps(x);
      panels.push_back(
          {"GE gathered gate (mean)", viz::overlay(crop, channel_mean(e.maps.at("attention")))});

      const cvattn::Attended c = coord.forward_with_maps(x);
      const Tensor& ah = c.maps.at(cvattn::maps::kAttentionH);  // [1, C, H]
      const Tensor& aw = c.maps.at(cvattn::maps::kAttentionW);  // [1, C, W]
      Tensor rows = Tensor::zeros({kGrid, 1}), cols = Tensor::zeros({1, kGrid});
      Tensor product = Tensor::zeros({kGrid, kGrid});
      for (std::int64_t k = 0; k < kChannels; ++k) {
        for (std::int64_t y = 0; y < kGrid; ++y) {
          rows.data()[y] += ah.data()[k * kGrid + y] / kChannels;
          for (std::int64_t xx = 0; xx < kGrid; ++xx) {
            product.data()[y * kGrid + xx] +=
                ah.data()[k * kGrid + y] * aw.data()[k * kGrid + xx] / kChannels;
          }
        }
        for (std::int64_t xx = 0; xx < kGrid; ++xx)
          cols.data()[xx] += aw.data()[k * kGrid + xx] / kChannels;
      }
      panels.push_back({"CoordAttn row gate", viz::heatmap(rows, {kPanel, kPanel})});
      panels.push_back({"CoordAttn column gate", viz::heatmap(cols, {kPanel, kPanel})});
      panels.push_back({"CoordAttn row x column", viz::overlay(crop, product)});

      // BoTNet: [1, heads, HW, HW]; the query's row, mean over heads.
      const Tensor ba = bot.forward_with_maps(x).maps.at("attention");
      const std::int64_t hw = kGrid * kGrid, heads = ba.dim(1);
      const std::int64_t qi = query.y * kGrid + query.x;
      Tensor brow = Tensor::zeros({kGrid, kGrid});
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t j = 0; j < hw; ++j) brow.data()[j] += ba.data()[(h * hw + qi) * hw + j];
      }
      panels.push_back({"BoTNet: query's attention", mark(viz::overlay(crop, brow), query)});

      // Halo: [1, heads, blocks, bs^2, win^2]; the query's block row, placed on the map.
      const Tensor hm = halo.forward_with_maps(x).maps.at("attention");
      const std::int64_t bs = 8, hs = 2, win = bs + 2 * hs, nbx = kGrid / bs;
      const std::int64_t blocks = hm.dim(2), bq = hm.dim(3), wn = hm.dim(4);
      const std::int64_t b = (query.y / bs) * nbx + query.x / bs;
      const std::int64_t q = (query.y % bs) * bs + query.x % bs;
      Tensor hrow = Tensor::zeros({kGrid, kGrid});
      for (std::int64_t h = 0; h < hm.dim(1); ++h) {
        const float* r = hm.data() + ((h * blocks + b) * bq + q) * wn;
        for (std::int64_t i = 0; i < win; ++i) {
          for (std::int64_t j = 0; j < win; ++j) {
            const std::int64_t y = (query.y / bs) * bs - hs + i, xx = (query.x / bs) * bs - hs + j;
            if (y >= 0 && y < kGrid && xx >= 0 && xx < kGrid)
              hrow.data()[y * kGrid + xx] += r[i * win + j];
          }
        }
      }
      panels.push_back({"Halo: query's block + halo", mark(viz::overlay(crop, hrow), query)});

      const Tensor route = routing.forward(x);                          // [1, 4]
      const Tensor pi = dyn.forward_with_maps(x).maps.at("attention");  // [1, 4]
      panels.push_back({"CondConv routing", bars(route, "sigmoid routing, 4 experts")});
      panels.push_back({"dynamic conv attention", bars(pi, "softmax over 4 kernels")});
      std::cout << file.filename().string() << ": cond_conv routing " << values(route)
                << ", dynamic_conv attention " << values(pi) << "\n";

      const cv::Mat sheet = viz::contact_sheet(
          panels, 4, viz::ContactSheetOptions().cell_size({kPanel, kPanel}).label_height(22));
      const fs::path png = output / (file.stem().string() + "_layers.png");
      if (!cv::imwrite(png.string(), sheet)) throw cvattn::IoError("cannot write " + png.string());
      ++written;
    }
    std::cout << "wrote " << sample::count(written, "PNG") << " to " << output.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "layer_maps: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
