// classify: any network of cvattn::models::supported_models() with your timm weights, on an image
// or a folder. For each image it applies timm's evaluation preprocessing for that model
// (models::data_config: resize, centre crop, mean/std), prints the top-k classes, and writes a
// contact sheet of what the network saw and where it looked:
//
//  * the class activation map of the top class (global-pool + linear heads: ResNets, EfficientNet,
//    ...) or the attention rollout (ViT family, --fusion and --discard), over the crop;
//  * every attention map the network returns, drawn by its module path: channel gates (SE, ECA,
//    routing weights) as bar charts, spatial gates as overlays, token attention ([N,heads,T,T]) as
//    the class token's attention over the patch grid, windowed attention as its mean matrix.
//
//   classify --model=seresnet18 --weights=seresnet18.safetensors --input=photos/
//   --classes=names.txt
//
// Weights: a timm state_dict as .safetensors (tools/export_weights.py converts a .pt/.pth).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;
namespace viz = cvattn::viz;
namespace models = cvattn::models;
using cvattn::Tensor;

namespace {

constexpr int kPanel = 224;  // pixels of each picture on the sheet

// One class name per line; empty file name: "class <k>".
std::vector<std::string> read_classes(const std::string& file, std::int64_t num_classes) {
  std::vector<std::string> names;
  if (!file.empty()) {
    std::ifstream in(sample::find_asset(file));
    if (!in) throw cvattn::IoError("cannot read --classes file " + file);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      names.push_back(line);
    }
    if (static_cast<std::int64_t>(names.size()) != num_classes) {
      throw cvattn::ValueError("--classes: " + file + " has " + std::to_string(names.size()) +
                               " lines, the network has " + std::to_string(num_classes) +
                               " classes");
    }
  }
  for (auto k = static_cast<std::int64_t>(names.size()); k < num_classes; ++k) {
    names.push_back("class " + std::to_string(k));
  }
  return names;
}

// Probabilities of sample 0's logits, in double for a stable softmax.
std::vector<double> softmax0(const Tensor& logits) {
  const auto k = static_cast<std::size_t>(logits.dim(1));
  const float* p = logits.data();
  const double peak = *std::max_element(p, p + k);
  std::vector<double> out(k);
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i) sum += out[i] = std::exp(p[i] - peak);
  for (double& v : out) v /= sum;
  return out;
}

std::int64_t integer_sqrt(std::int64_t v) {
  auto r = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(v))));
  return r * r == v ? r : -1;
}

// A [rows, cols] tensor made of `values`.
Tensor plane(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
  Tensor t = Tensor::empty({rows, cols});
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

// Sample 0 of an attention map as a picture, chosen by its shape; empty when it has no picture.
cv::Mat draw_map(const Tensor& map, std::int64_t batch, const cv::Mat& crop, std::string& kind) {
  const cvattn::Shape& s = map.shape();
  if (s.empty() || s[0] != batch || map.numel() == 0) {
    // Windowed attention ([N * windows, heads, T, T]): the mean matrix over windows and heads.
    if (s.size() == 4 && s[2] == s[3] && s[0] % batch == 0) {
      const std::int64_t windows = s[0] / batch, t = s[2];
      std::vector<float> mean(static_cast<std::size_t>(t * t), 0.0f);
      const float* p = map.data();
      for (std::int64_t w = 0; w < windows * s[1]; ++w) {
        for (std::int64_t i = 0; i < t * t; ++i)
          mean[static_cast<std::size_t>(i)] += p[w * t * t + i];
      }
      kind = "window attention (mean)";
      return viz::heatmap(plane(mean, t, t), {kPanel, kPanel});
    }
    return {};
  }
  std::int64_t inner = 1;  // elements per sample
  for (std::size_t i = 1; i < s.size(); ++i) inner *= s[i];
  const auto trailing_ones = [&](std::size_t from) {
    for (std::size_t i = from; i < s.size(); ++i) {
      if (s[i] != 1) return false;
    }
    return true;
  };
  // Channel-like weights: [N, C], [N, C, 1, 1], [N, K, C, 1, 1] (SK paths: per-path means).
  if ((s.size() == 2 || (s.size() >= 3 && trailing_ones(2))) && inner <= 4096) {
    kind = "channel gate";
    Tensor row = Tensor::empty({1, inner});
    std::copy(map.data(), map.data() + inner, row.data());
    return viz::bar_chart(row, viz::BarChartOptions().size({2 * kPanel, kPanel}));
  }
  if (s.size() == 5 && trailing_ones(3)) {
    kind = "path weights (mean over channels)";
    Tensor row = Tensor::zeros({1, s[1]});
    for (std::int64_t k = 0; k < s[1]; ++k) {
      double sum = 0.0;
      for (std::int64_t c = 0; c < s[2]; ++c) sum += map.data()[k * s[2] + c];
      row.data()[k] = static_cast<float>(sum / static_cast<double>(s[2]));
    }
    return viz::bar_chart(row, viz::BarChartOptions().size({2 * kPanel, kPanel}));
  }
  // Spatial gates: [N, 1, h, w] or [N, h, w].
  if ((s.size() == 4 && s[1] == 1) || s.size() == 3) {
    kind = "spatial";
    return viz::overlay(crop, map);
  }
  // Token attention [N, heads, T, T]: prefix tokens' (or the mean query's) attention on patches.
  if (s.size() == 4 && s[2] == s[3]) {
    const std::int64_t heads = s[1], t = s[2];
    for (std::int64_t prefix : {1, 2, 0}) {
      const std::int64_t g = integer_sqrt(t - prefix);
      if (g < 1) continue;
      std::vector<float> row(static_cast<std::size_t>(g * g), 0.0f);
      const float* p = map.data();
      const std::int64_t queries = prefix > 0 ? 1 : t;
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t q = 0; q < queries; ++q) {
          const float* r = p + (h * t + q) * t + prefix;
          for (std::int64_t j = 0; j < g * g; ++j) row[static_cast<std::size_t>(j)] += r[j];
        }
      }
      kind = prefix > 0 ? "class token attention" : "mean attention received";
      return viz::overlay(crop, plane(row, g, g));
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      std::string("{help h    |              | print this help }") +
      "{model m   |              | timm model name (see --help's list; required) }"
      "{weights w |              | the model's timm state_dict as .safetensors (required) }"
      "{input i   | images       | image files or folders separated by ',' (relative to --assets "
      "unless they exist) }"
      "{output o  | out/classify | folder for the PNGs }"
      "{classes   |              | text file with one class name per line (default: class k) }"
      "{topk k    | 5            | classes printed per image }"
      "{fusion    | mean         | attention rollout head fusion: mean, max or min }"
      "{discard   | 0            | attention rollout discard ratio in [0, 1) }"
      "{threads   | 0            | threads for the network (0: all) }" +
      sample::assets_key() + sample::batch_keys();
  std::string names;
  for (const std::string& n : models::supported_models()) names += (names.empty() ? "" : ", ") + n;
  const std::string about =
      "classify: a timm network with your weights on images; prints the top classes and draws the "
      "class activation map or attention rollout and every attention map. Models: " +
      names;
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const std::string model_name = parser.get<std::string>("model");
  const std::string weights_arg = parser.get<std::string>("weights");
  const std::string input = parser.get<std::string>("input");
  const fs::path output = parser.get<std::string>("output");
  const std::string classes_file = parser.get<std::string>("classes");
  const int topk = parser.get<int>("topk");
  const std::string fusion_word = parser.get<std::string>("fusion");
  const double discard = parser.get<double>("discard");
  const int threads = parser.get<int>("threads");
  const std::string list = parser.get<std::string>("list");
  const std::string shard = parser.get<std::string>("shard");
  if (!parser.check()) return sample::value_errors(parser, "classify");
  if (model_name.empty() || weights_arg.empty()) {
    std::cerr << "classify: error: --model and --weights are required (see --help)\n";
    return 2;
  }
  try {
    if (topk < 1) throw cvattn::ValueError("--topk must be >= 1");
    if (!(discard >= 0.0 && discard < 1.0)) throw cvattn::ValueError("--discard must be in [0, 1)");
    if (threads < 0) throw cvattn::ValueError("--threads must be >= 0");
    if (threads > 0) cvattn::set_num_threads(threads);
    const auto fusion = cvattn::functional::parse_head_fusion(fusion_word);
    const models::DataConfig cfg = models::data_config(model_name);
    const fs::path weights = sample::find_asset(weights_arg);
    const auto net = models::create(model_name, cvattn::io::load_safetensors(weights.string()));
    const std::vector<std::string> classes = read_classes(classes_file, net->num_classes());
    const std::vector<fs::path> files = sample::select_inputs(input, list, shard);
    fs::create_directories(output);
    std::size_t written = 0;
    for (const fs::path& file : files) {
      const cv::Mat bgr = cv::imread(file.string(), cv::IMREAD_COLOR);
      if (bgr.empty()) throw cvattn::IoError("cannot read image " + file.string());
      const cv::Mat crop = models::center_crop(bgr, cfg);
      const models::NetworkOutput out = net->run(models::preprocess(bgr, cfg), true);
      const std::vector<double> prob = softmax0(out.logits);
      std::vector<std::size_t> order(prob.size());
      std::iota(order.begin(), order.end(), 0);
      const auto k = std::min<std::size_t>(static_cast<std::size_t>(topk), order.size());
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](std::size_t a, std::size_t b) { return prob[a] > prob[b]; });
      std::cout << file.filename().string() << ":";
      for (std::size_t i = 0; i < k; ++i) {
        std::printf("%s %zu. %s %.4f", i ? "," : "", i + 1, classes[order[i]].c_str(),
                    prob[order[i]]);
      }
      std::printf("\n");

      std::vector<viz::Panel> panels{{"input " + std::to_string(cfg.input_size) + "px", crop}};
      if (net->has_class_activation_map()) {
        panels.push_back(
            {"CAM: " + classes[order[0]], viz::overlay(crop, net->class_activation_map(out))});
      } else if (net->has_rollout()) {
        panels.push_back({std::string("rollout (") + cvattn::functional::to_string(fusion) + ")",
                          viz::overlay(crop, net->rollout(out, fusion, discard))});
      }
      std::size_t undrawn = 0;
      for (const auto& [path, map] : out.maps.items()) {
        std::string kind;
        cv::Mat picture = draw_map(map, out.logits.dim(0), crop, kind);
        if (picture.empty()) {
          ++undrawn;
          continue;
        }
        if (picture.size() != cv::Size(kPanel, kPanel)) {
          cv::resize(picture, picture, {kPanel, kPanel}, 0, 0, cv::INTER_AREA);
        }
        panels.push_back({path, picture});
      }
      const cv::Mat sheet = viz::contact_sheet(
          panels, 4, viz::ContactSheetOptions().cell_size({kPanel, kPanel}).label_height(20));
      const fs::path png = output / (file.stem().string() + "_" + model_name + ".png");
      if (!cv::imwrite(png.string(), sheet)) throw cvattn::IoError("cannot write " + png.string());
      ++written;
      if (undrawn > 0) {
        std::cout << "  (" << sample::count(undrawn, "map") << " without a picture)\n";
      }
    }
    std::cout << "wrote " << sample::count(written, "PNG") << " to " << output.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "classify: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
