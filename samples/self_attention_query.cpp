// self_attention_query: where a pixel "looks" under self-attention over a feature map of the
// trained attention_shapes network. The CBAM-refined features [1, 32, h, w] become h*w tokens;
// attention weights softmax(q k^T * scale) with q = k = the tokens (no learned projections) come
// from functional::scaled_dot_product_attention, and each query pixel's row is drawn over the
// image with viz::query_overlay. The attention source is one function (self_attention below), so
// a NonLocal or MultiheadAttention module can replace it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "demo_support.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;
namespace viz = cvattn::viz;
namespace F = cvattn::functional;

namespace {

enum class Similarity { dot, cosine };

// Self-attention weights [1, L, L] (L = h*w, token y*w + x) over features [1, C, h, w].
//   dot:    scaled dot product, scale 1/sqrt(C) (SDPA's default), q = k = v = tokens
//   cosine: tokens normalised to unit length, scale 1/temperature
// The one place the attention comes from: swap in a trained NonLocal / MultiheadAttention here.
cvattn::Tensor self_attention(const cvattn::Tensor& features, Similarity similarity,
                              double temperature) {
  cvattn::Tensor tokens = F::flatten_spatial(features);  // [1, L, C]
  F::SdpaOptions options;
  if (similarity == Similarity::cosine) {
    tokens = tokens.clone();
    const std::int64_t l = tokens.dim(1), c = tokens.dim(2);
    for (std::int64_t i = 0; i < l; ++i) {
      float* row = tokens.data() + i * c;
      double norm = 0;
      for (std::int64_t k = 0; k < c; ++k) norm += static_cast<double>(row[k]) * row[k];
      const auto inv = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
      for (std::int64_t k = 0; k < c; ++k) row[k] *= inv;
    }
    options.scale(1.0 / temperature);
  }
  return F::scaled_dot_product_attention(tokens, tokens, tokens, {}, options).attn_weights;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      demo::common_keys("out/self_attention_query", 256) +
      "{queries q   |       | query image pixels 'x1,y1;x2,y2;...'; default: CBAM's spatial "
      "peak and three spread pixels }"
      "{similarity  | dot   | dot (scaled dot product, 1/sqrt(C)) or cosine }"
      "{temperature | 0.1   | cosine only: scale = 1/temperature }"
      "{colormap    | turbo | any cv::ColormapTypes name }"
      "{alpha       | 0.55  | heat-map opacity in [0, 1] }";
  const std::string about =
      "self_attention_query: self-attention maps of chosen query pixels over the trained "
      "network's features (scaled dot-product attention, q = k = features)";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const fs::path output = parser.get<std::string>("output");
  const std::string queries = parser.get<std::string>("queries");
  const std::string similarity_word = parser.get<std::string>("similarity");
  const double temperature = parser.get<double>("temperature");
  const std::string colormap = parser.get<std::string>("colormap");
  const double alpha = parser.get<double>("alpha");
  const int size = parser.get<int>("size");
  const int full_res = parser.get<int>("full-res");
  if (!parser.check()) return sample::value_errors(parser, "self_attention_query");
  return demo::run_guarded("self_attention_query", [&] {
    if (size < 32 || size > 2048) throw std::runtime_error("--size must be in 32..2048");
    if (similarity_word != "dot" && similarity_word != "cosine") {
      throw std::runtime_error("--similarity must be dot or cosine, got '" + similarity_word + "'");
    }
    const Similarity similarity = similarity_word == "dot" ? Similarity::dot : Similarity::cosine;
    if (!(temperature > 0) || !std::isfinite(temperature)) {
      throw std::runtime_error("--temperature must be positive");
    }
    const viz::QueryOverlayOptions style =
        viz::QueryOverlayOptions().alpha(alpha).colormap(viz::parse_colormap(colormap));
    const std::vector<cv::Point> pixels =
        queries.empty() ? std::vector<cv::Point>() : demo::parse_points(queries);
    const std::vector<fs::path> files = demo::inputs(parser, demo::bundled_inputs());
    const auto net = cvattn::AttentionShapesNet::load(demo::weights(parser).string());
    std::vector<viz::Panel> index;
    demo::Progress progress("self_attention_query", files.size());
    for (const auto& file : files) {
      const cv::Mat bgr = demo::read_bgr(file);
      std::vector<cv::Point> chosen = pixels;
      demo::check_inside(chosen, bgr.size(), file);
      // Photos at the finer, fully convolutional resolution; the synthetic images at 64x64.
      const auto runs = demo::resolutions(bgr, full_res);
      const auto& run = runs.back();
      const cvattn::Attended r = net->forward_with_maps(
          cvattn::AttentionShapesNet::input_from_image(run.second, cv::Size()));
      const cvattn::Tensor& features = r.maps.at(cvattn::attention_shapes::kFeatures);
      const cv::Size m = demo::map_size(features);
      if (chosen.empty()) {
        const cv::Point2d peak = demo::cell_centre(
            demo::peak_cell(r.maps.at(cvattn::maps::kSpatialAttention)), m, bgr.size());
        chosen = {cv::Point(cvFloor(peak.x), cvFloor(peak.y)),
                  {bgr.cols / 4, bgr.rows / 4},
                  {3 * bgr.cols / 4, bgr.rows / 2},
                  {bgr.cols / 3, 4 * bgr.rows / 5}};
      }
      const cvattn::Tensor attention = self_attention(features, similarity, temperature);
      const cv::Mat display = demo::display_image(bgr, size);
      std::vector<viz::Panel> panels = {{"input, features @" + run.first, display}};
      for (const cv::Point& p : chosen) {
        const cv::Point cell = demo::cell_at(p, bgr.size(), m);
        panels.push_back({"query (" + std::to_string(p.x) + ", " + std::to_string(p.y) + ")",
                          viz::query_overlay(display, attention, cell, m, style)});
      }
      const std::string stem = file.stem().string();
      for (std::size_t i = 1; i < panels.size(); ++i) {
        demo::write_png(output / stem / ("query_" + std::to_string(i - 1) + ".png"),
                        panels[i].image);
      }
      demo::write_png(output / (stem + "_queries.png"), viz::contact_sheet(panels, 3));
      index.push_back({file.filename().string(), panels[1].image});
      progress.step(file.filename().string());
    }
    progress.finish();
    if (demo::whole_run(parser)) {
      demo::write_index(output, index, size);
      std::cout << "wrote " << sample::count(files.size(), "sheet") << " and "
                << (output / "index.png").string() << "\n";
    } else {
      std::cout << "wrote " << sample::count(files.size(), "sheet") << " (shard "
                << parser.get<std::string>("shard") << "; no index.png)\n";
    }
    return 0;
  });
}
