// attention_demo: the README's first command. Two networks:
//
//  --model=fashion (default): the Fashion-MNIST CNN with SE, SelectiveKernel and CBAM blocks
//    (assets/weights/fashion_cnn.md) on the bundled test images (assets/fashion). For every
//    image it prints the prediction and draws the SE and CBAM channel gates, SK's path choice,
//    CBAM's spatial gate and the class activation map (CAM) of the predicted class.
//  --model=shapes: the attention_shapes network (SelectiveKernel -> DCNv2 -> CBAM,
//    assets/weights/attention_shapes.md), trained on synthetic "find the striped triangle"
//    images where the right place to attend is known: it draws what each attention block did
//    -- the learned, task-driven (top-down) attention -- next to OpenCV's stimulus-driven
//    (bottom-up) saliency (cv::saliency, spectral residual and fine-grained), and on folders with
//    annotations.json (assets/synthetic) prints how often CBAM's spatial-attention peak falls
//    inside the target's box.
//
// Writes one labelled panel per picture, a contact sheet per image and (unsharded runs) an index
// sheet, and prints the accuracy over the labelled images.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/saliency.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "demo_support.hpp"
#include "fashion_net.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;
namespace viz = cvattn::viz;
namespace shapes = cvattn::attention_shapes;

namespace {

struct Settings {
  cv::ColormapTypes colormap = cv::COLORMAP_TURBO;
  double alpha = 0.5;
  int size = 256;           // longer side of every panel
  int full_res = 256;       // longer side for the fully convolutional run (0: off)
  bool stats_only = false;  // only the numbers, no pictures
};

// What one image gave, for the statistics and the index sheet.
struct Verdict {
  int prediction = -1;
  double confidence = 0;
  bool annotated = false, correct = false, peak_inside = false;
  double box_share = 0;  // the target box's share of the image (chance level of a random peak)
};

cv::Rect scale_rect(const cv::Rect& r, double sx, double sy) {
  return cv::Rect(cv::Point(cvRound(r.x * sx), cvRound(r.y * sy)),
                  cv::Point(cvRound(r.br().x * sx), cvRound(r.br().y * sy)));
}

void draw_box(cv::Mat& image, const cv::Rect& box) {
  cv::rectangle(image, box, cv::Scalar(0, 0, 0), 3);
  cv::rectangle(image, box, cv::Scalar(0, 255, 0), 1);
}

void draw_peak(cv::Mat& image, cv::Point2d at) {
  cv::drawMarker(image, at, cv::Scalar(0, 0, 0), cv::MARKER_CROSS, 17, 4);
  cv::drawMarker(image, at, cv::Scalar(255, 255, 255), cv::MARKER_CROSS, 15, 2);
}

// Softmax of logits row 0 -> (arg-max, its probability).
std::pair<int, double> top_class(const cvattn::Tensor& logits) {
  const std::int64_t c = logits.dim(1);
  int best = 0;
  for (int k = 1; k < c; ++k) best = logits[k] > logits[best] ? k : best;
  double sum = 0;
  for (int k = 0; k < c; ++k) sum += std::exp(static_cast<double>(logits[k] - logits[best]));
  return {best, 1.0 / sum};
}

// Mean length of the 9 taps' (dy, dx) displacements per output cell, in feature-map cells.
cv::Mat offset_length(const cvattn::Tensor& offset) {
  const int taps = static_cast<int>(offset.dim(1) / 2);
  cv::Mat sum =
      cv::Mat::zeros(static_cast<int>(offset.dim(2)), static_cast<int>(offset.dim(3)), CV_32F);
  for (int k = 0; k < taps; ++k) {
    cv::Mat length;
    cv::magnitude(offset.plane(0, 2 * k + 1), offset.plane(0, 2 * k), length);
    sum += length;
  }
  return sum / taps;
}

// DCNv2 taps of a few output cells: the spatial peak and three fixed cells spread over the map.
cv::Mat sampling_panel(const cv::Mat& display, const cvattn::Attended& r, cv::Point peak) {
  const cv::Size m = demo::map_size(r.maps.at(cvattn::maps::kOffset));
  return demo::draw_dcn_taps(display, r.maps.at(cvattn::maps::kOffset),
                             r.maps.at(cvattn::maps::kMask),
                             {peak,
                              {m.width / 4, m.height / 4},
                              {3 * m.width / 4, m.height / 3},
                              {m.width / 3, 3 * m.height / 4}});
}

cv::Mat saliency_overlay(const cv::Ptr<cv::saliency::StaticSaliency>& algorithm, const cv::Mat& bgr,
                         const cv::Mat& display, const Settings& s) {
  cv::Mat map;
  if (!algorithm->computeSaliency(bgr, map) || map.empty()) {
    throw std::runtime_error("cv::saliency failed");
  }
  return viz::overlay(display, map, viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap));
}

struct NamedPanel {
  std::string file;  // PNG name without extension
  std::string label;
  cv::Mat image;
};

struct ImageOutput {
  Verdict verdict;
  std::vector<NamedPanel> panels;
};

ImageOutput process(const cv::Mat& bgr, const cvattn::AttentionShapesNet& net,
                    const demo::Annotation* note, const Settings& s) {
  ImageOutput out;
  Verdict& v = out.verdict;
  const cvattn::Attended r =
      net.forward_with_maps(cvattn::AttentionShapesNet::input_from_image(bgr));
  std::tie(v.prediction, v.confidence) = top_class(r.output);
  const cvattn::Tensor& spatial = r.maps.at(cvattn::maps::kSpatialAttention);
  const cv::Point peak = demo::peak_cell(spatial);
  if (note) {
    const cv::Point2d at = demo::cell_centre(peak, demo::map_size(spatial), bgr.size());
    v.annotated = true;
    v.correct = v.prediction == note->label;
    v.peak_inside = at.x >= note->box.x && at.x < note->box.br().x && at.y >= note->box.y &&
                    at.y < note->box.br().y;
    v.box_share = static_cast<double>(note->box.area()) / bgr.size().area();
  }
  if (s.stats_only) return out;

  const cv::Mat display = demo::display_image(bgr, s.size);
  const double sx = static_cast<double>(display.cols) / bgr.cols;
  const double sy = static_cast<double>(display.rows) / bgr.rows;
  const std::string& name = shapes::class_names()[static_cast<std::size_t>(v.prediction)];
  char text[160];
  auto& panels = out.panels;

  cv::Mat input = display.clone();
  if (note) {
    draw_box(input, scale_rect(note->box, sx, sy));
    std::snprintf(text, sizeof text, "true %s, predicted %s %.0f%%",
                  shapes::class_names()[static_cast<std::size_t>(note->label)].c_str(),
                  name.c_str(), 100 * v.confidence);
  } else {
    std::snprintf(text, sizeof text, "input %dx%d", bgr.cols, bgr.rows);
  }
  panels.push_back({"input", text, input});

  cv::Mat gate =
      viz::overlay(display, spatial, viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap));
  draw_peak(gate, demo::cell_centre(peak, demo::map_size(spatial), display.size()));
  if (note) draw_box(gate, scale_rect(note->box, sx, sy));
  std::snprintf(text, sizeof text, "top-down: CBAM spatial @64x64%s",
                note ? (v.peak_inside ? ", peak in box" : ", peak outside") : "");
  panels.push_back({"cbam_spatial", text, gate});

  const auto runs = demo::resolutions(bgr, s.full_res);
  if (runs.size() > 1) {
    // Everything before the global pooling is convolutional: the same gates at photo scale.
    const cvattn::Attended full = net.forward_with_maps(
        cvattn::AttentionShapesNet::input_from_image(runs[1].second, cv::Size()));
    const cvattn::Tensor& fs = full.maps.at(cvattn::maps::kSpatialAttention);
    cv::Mat big =
        viz::overlay(display, fs, viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap));
    draw_peak(big, demo::cell_centre(demo::peak_cell(fs), demo::map_size(fs), display.size()));
    panels.push_back({"cbam_spatial_fullres", "top-down: CBAM spatial @" + runs[1].first, big});
  }

  const cv::Size chart(s.size * 5 / 4, s.size);
  panels.push_back({"cbam_channels", "CBAM channel gate (32 channels)",
                    viz::bar_chart(r.maps.at(cvattn::maps::kChannelAttention),
                                   viz::BarChartOptions()
                                       .size(chart)
                                       .y_min(0)
                                       .y_max(1)
                                       .colormap(s.colormap)
                                       .title("CBAM channel gate"))});
  // SK's softmax over its two paths, per channel: the share of the dilated (5x5 field) path.
  const cvattn::Tensor& sk = r.maps.at(shapes::kSkAttention);  // [1, 2, 24]
  const std::int64_t c = sk.dim(2);
  cvattn::Tensor dilated = cvattn::Tensor::empty({c});
  for (std::int64_t i = 0; i < c; ++i) dilated[i] = sk[c + i];
  panels.push_back({"sk_paths", "SK path selection per channel",
                    viz::bar_chart(dilated, viz::BarChartOptions()
                                                .size(chart)
                                                .y_min(0)
                                                .y_max(1)
                                                .colormap(s.colormap)
                                                .title("SK: weight of the dilation-2 path"))});

  panels.push_back(
      {"sk_share", "SK: dilated path's share per pixel",
       viz::overlay(display, r.maps.at(shapes::kSkPathShare),
                    viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap).range(0, 1))});
  panels.push_back({"dcn_taps", "DCNv2 taps (dot size = mask)", sampling_panel(display, r, peak)});
  panels.push_back({"dcn_offsets", "DCNv2 mean offset length",
                    viz::overlay(display, offset_length(r.maps.at(cvattn::maps::kOffset)),
                                 viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap))});

  panels.push_back(
      {"saliency_spectral", "bottom-up: spectral residual",
       saliency_overlay(cv::saliency::StaticSaliencySpectralResidual::create(), bgr, display, s)});
  panels.push_back(
      {"saliency_fine_grained", "bottom-up: fine-grained",
       saliency_overlay(cv::saliency::StaticSaliencyFineGrained::create(), bgr, display, s)});
  return out;
}

struct FolderStats {
  int images = 0, correct = 0, inside = 0;
  double box_share = 0;
};

// ---- --model=fashion ---------------------------------------------------------------------------

ImageOutput process_fashion(const cv::Mat& bgr, const demo::FashionCnn& net, int label,
                            const Settings& s) {
  ImageOutput out;
  Verdict& v = out.verdict;
  const cvattn::Attended r = net.forward_with_maps(demo::FashionCnn::input_from_image(bgr));
  std::tie(v.prediction, v.confidence) = top_class(r.output);
  v.annotated = label >= 0;
  v.correct = label == v.prediction;
  if (s.stats_only) return out;
  const auto& classes = demo::fashion_classes();
  const cv::Mat display = demo::display_image(bgr, s.size);
  const auto heat = [&](const cv::Mat& map) {
    return viz::overlay(display, map, viz::OverlayOptions().alpha(s.alpha).colormap(s.colormap));
  };
  const cv::Size chart(s.size * 5 / 4, s.size);
  const auto bars = [&](const cvattn::Tensor& w, const std::string& title) {
    return viz::bar_chart(
        w, viz::BarChartOptions().size(chart).y_min(0).y_max(1).colormap(s.colormap).title(title));
  };
  char text[160];
  const std::string& name = classes[static_cast<std::size_t>(v.prediction)];
  if (label >= 0) {
    std::snprintf(text, sizeof text, "true %s, predicted %s %.0f%%",
                  classes[static_cast<std::size_t>(label)].c_str(), name.c_str(),
                  100 * v.confidence);
  } else {
    std::snprintf(text, sizeof text, "predicted %s %.0f%%", name.c_str(), 100 * v.confidence);
  }
  auto& panels = out.panels;
  panels.push_back({"input", text, display});
  const cvattn::Tensor& cam = r.maps.at("cam");  // [1, 10, 7, 7]
  panels.push_back({"cam", "CAM of '" + name + "'", heat(cam.plane(0, v.prediction))});
  panels.push_back({"cbam_spatial", "CBAM spatial gate @7x7",
                    heat(r.maps.at(cvattn::maps::kSpatialAttention).plane(0, 0))});
  panels.push_back(
      {"se_channels", "SE channel gate (32, 28x28)", bars(r.maps.at("se"), "SE gate")});
  const cvattn::Tensor& sk = r.maps.at("sk");  // [1, 2, 64]
  const std::int64_t c = sk.dim(2);
  cvattn::Tensor dilated = cvattn::Tensor::empty({c});
  for (std::int64_t i = 0; i < c; ++i) dilated[i] = sk[c + i];
  panels.push_back({"sk_paths", "SK path selection (64, 14x14)",
                    bars(dilated, "SK: weight of the dilation-2 path")});
  panels.push_back({"cbam_channels", "CBAM channel gate (96, 7x7)",
                    bars(r.maps.at(cvattn::maps::kChannelAttention), "CBAM channel gate")});
  return out;
}

// The label of `file` from labels.json beside it (-1 when there is none).
int fashion_label(std::map<fs::path, demo::Labels>& cache, const fs::path& file) {
  const fs::path folder = file.parent_path();
  if (!cache.count(folder)) cache[folder] = demo::read_labels(folder / "labels.json");
  const auto& of = cache[folder].of;
  const auto it = of.find(file.filename().string());
  return it == of.end() ? -1 : it->second;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      demo::common_keys("out/attention_demo", 256, "",
                        "assets/fashion (--model=fashion) or assets/images and assets/synthetic "
                        "(--model=shapes)") +
      "{model      | fashion | fashion (the Fashion-MNIST CNN) or shapes (attention_shapes) }"
      "{colormap   | turbo | any cv::ColormapTypes name: turbo, jet, inferno, ... }"
      "{alpha      | 0.5   | heat-map opacity in [0, 1] }"
      "{stats-only |       | no pictures: only predictions, accuracy and peak-in-box figures }";
  const std::string about =
      "attention_demo: what the attention blocks of a trained network did, as labelled overlay "
      "panels and contact sheets, with the prediction for each image";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const fs::path output = parser.get<std::string>("output");
  const std::string colormap = parser.get<std::string>("colormap");
  const std::string model = parser.get<std::string>("model");
  Settings s;
  s.alpha = parser.get<double>("alpha");
  s.size = parser.get<int>("size");
  s.full_res = parser.get<int>("full-res");
  s.stats_only = parser.has("stats-only");
  if (!parser.check()) return sample::value_errors(parser, "attention_demo");
  if (model != "fashion" && model != "shapes") {
    std::cerr << "attention_demo: error: --model must be fashion or shapes, got '" << model
              << "'\n";
    return 2;
  }
  const bool fashion = model == "fashion";
  return demo::run_guarded("attention_demo", [&] {
    s.colormap = viz::parse_colormap(colormap);
    if (!(s.alpha >= 0 && s.alpha <= 1)) throw std::runtime_error("--alpha must be in [0, 1]");
    if (s.size < 32 || s.size > 2048) throw std::runtime_error("--size must be in 32..2048");
    const std::vector<fs::path> files =
        demo::inputs(parser, fashion ? "fashion" : demo::bundled_inputs());
    std::string weights = parser.get<std::string>("weights");
    if (weights.empty()) {
      weights =
          fashion ? "weights/fashion_cnn.safetensors" : "weights/attention_shapes.safetensors";
    }
    const fs::path weights_file = sample::find_asset(weights);
    std::shared_ptr<cvattn::AttentionShapesNet> shapes_net;
    std::shared_ptr<demo::FashionCnn> fashion_net;
    if (fashion) {
      fashion_net = demo::FashionCnn::load(weights_file);
    } else {
      shapes_net = cvattn::AttentionShapesNet::load(weights_file.string());
    }
    const std::vector<std::string>& classes =
        fashion ? demo::fashion_classes() : shapes::class_names();

    std::map<fs::path, std::map<std::string, demo::Annotation>> notes;
    std::map<fs::path, demo::Labels> labels;
    std::map<fs::path, FolderStats> stats;
    std::vector<viz::Panel> index;
    constexpr std::size_t kIndexMax = 48;
    std::vector<std::string> written;
    std::vector<std::string> lines;
    {
      demo::Progress progress("attention_demo", files.size());
      for (const auto& file : files) {
        const fs::path folder = file.parent_path();
        const cv::Mat bgr = demo::read_bgr(file);
        ImageOutput out;
        int label = -1;
        if (fashion) {
          label = fashion_label(labels, file);
          out = process_fashion(bgr, *fashion_net, label, s);
        } else {
          if (!notes.count(folder)) notes[folder] = demo::load_annotations(folder);
          const auto it = notes[folder].find(file.filename().string());
          const demo::Annotation* note = it == notes[folder].end() ? nullptr : &it->second;
          label = note ? note->label : -1;
          out = process(bgr, *shapes_net, note, s);
        }
        const Verdict& v = out.verdict;
        char line[256];
        std::snprintf(
            line, sizeof line, "%s: predicted %s (p %.2f)%s%s", file.filename().string().c_str(),
            classes[static_cast<std::size_t>(v.prediction)].c_str(), v.confidence,
            label < 0 ? ", no label" : ", label ",
            label < 0 ? ""
                      : (classes[static_cast<std::size_t>(label)] + (v.correct ? " ok" : " WRONG"))
                            .c_str());
        lines.push_back(line);
        if (v.annotated) {
          FolderStats& f = stats[folder];
          ++f.images;
          f.correct += v.correct;
          f.inside += v.peak_inside;
          f.box_share += v.box_share;
        }
        if (!s.stats_only) {
          const std::string stem = file.stem().string();
          std::vector<viz::Panel> labelled;
          for (const NamedPanel& p : out.panels) {
            demo::write_png(output / stem / (p.file + ".png"), p.image);
            labelled.push_back({p.label, p.image});
          }
          const cv::Mat sheet = viz::contact_sheet(
              labelled, fashion ? 3 : 4,
              viz::ContactSheetOptions().cell_size(cv::Size(s.size * 5 / 4, s.size)));
          demo::write_png(output / (stem + "_sheet.png"), sheet);
          written.push_back((output / (stem + "_sheet.png")).string());
          if (index.size() < kIndexMax) {
            std::string caption = file.filename().string();
            if (v.annotated) {
              caption += v.correct ? " right" : " WRONG";
              if (!fashion) caption += v.peak_inside ? ", peak in box" : ", peak outside";
            }
            index.push_back({caption, out.panels[1].image});
          }
        }
        progress.step(file.filename().string());
      }
    }
    for (const std::string& line : lines) std::cout << line << "\n";
    if (!s.stats_only) {
      if (demo::whole_run(parser)) {
        demo::write_index(output, index, s.size);
        std::cout << "wrote " << sample::count(written.size(), "contact sheet")
                  << ", their panels and " << (output / "index.png").string() << "\n";
      } else {
        std::cout << "wrote " << sample::count(written.size(), "contact sheet")
                  << " and their panels (shard " << parser.get<std::string>("shard")
                  << "; no index.png)\n";
      }
    }
    for (const auto& [folder, f] : stats) {
      if (fashion) {
        std::printf("%s: %s: accuracy %.2f %% (%d)\n", folder.string().c_str(),
                    sample::count(static_cast<std::size_t>(f.images), "labelled image").c_str(),
                    100.0 * f.correct / f.images, f.correct);
        continue;
      }
      std::printf(
          "%s: %s: accuracy %.2f %% (%d), CBAM spatial-attention peak inside "
          "the target box %.2f %% (%d; chance %.1f %%)\n",
          folder.string().c_str(),
          sample::count(static_cast<std::size_t>(f.images), "annotated image").c_str(),
          100.0 * f.correct / f.images, f.correct, 100.0 * f.inside / f.images, f.inside,
          100.0 * f.box_share / f.images);
    }
    return 0;
  });
}
