// deform_sampling: where the trained deformable convolution looks. For chosen output pixels, the
// nine sampling points of attention_shapes' DCNv2 layer (assets/weights/attention_shapes.md),
// drawn DCN-paper style next to the regular 3x3 grid a plain convolution would sample, on real
// photos and on the synthetic images the network was trained for. Dot size is the DCNv2 mask.
#include <algorithm>
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

namespace {

// Output cells under the chosen image pixels; without --points a 3x3 spread plus the peak of
// CBAM's spatial gate (where the classifier looks).
std::vector<cv::Point> chosen_cells(const std::vector<cv::Point>& pixels, cv::Size image,
                                    const cvattn::Attended& r) {
  const cv::Size m = demo::map_size(r.maps.at(cvattn::maps::kOffset));
  std::vector<cv::Point> cells;
  if (pixels.empty()) {
    for (int j = 1; j <= 3; j += 2)
      for (int i = 1; i <= 3; i += 2) cells.push_back({i * m.width / 4, j * m.height / 4});
    cells.push_back(demo::peak_cell(r.maps.at(cvattn::maps::kSpatialAttention)));
  } else {
    for (const cv::Point& p : pixels) cells.push_back(demo::cell_at(p, image, m));
  }
  return cells;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      demo::common_keys("out/deform_sampling", 320) +
      "{points p |  | image pixels 'x1,y1;x2,y2;...' whose output cells to draw; default: four "
      "spread cells and CBAM's spatial-attention peak }";
  const std::string about =
      "deform_sampling: sampling points of the trained DCNv2 layer for chosen output pixels, "
      "next to a plain convolution's regular grid";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const fs::path output = parser.get<std::string>("output");
  const std::string points = parser.get<std::string>("points");
  const int size = parser.get<int>("size");
  const int full_res = parser.get<int>("full-res");
  if (!parser.check()) return sample::value_errors(parser, "deform_sampling");
  return demo::run_guarded("deform_sampling", [&] {
    if (size < 32 || size > 2048) throw std::runtime_error("--size must be in 32..2048");
    const std::vector<cv::Point> pixels =
        points.empty() ? std::vector<cv::Point>() : demo::parse_points(points);
    const std::vector<fs::path> files = demo::inputs(parser, demo::bundled_inputs());
    const auto net = cvattn::AttentionShapesNet::load(demo::weights(parser).string());
    std::vector<viz::Panel> index;
    demo::Progress progress("deform_sampling", files.size());
    for (const auto& file : files) {
      const cv::Mat bgr = demo::read_bgr(file);
      demo::check_inside(pixels, bgr.size(), file);
      const cv::Mat display = demo::display_image(bgr, size);
      std::vector<viz::Panel> panels;
      // The 64x64 run the network was trained at, and for photos the fully convolutional one.
      const auto runs = demo::resolutions(bgr, full_res);
      for (std::size_t k = 0; k < runs.size(); ++k) {
        const cvattn::Attended r = net->forward_with_maps(
            cvattn::AttentionShapesNet::input_from_image(runs[k].second, cv::Size()));
        const std::vector<cv::Point> cells = chosen_cells(pixels, bgr.size(), r);
        const cvattn::Tensor& offset = r.maps.at(cvattn::maps::kOffset);
        if (k == 0) {
          // What a plain 3x3 convolution samples: the same layer with zero offsets and mask 1.
          panels.push_back({"regular 3x3 conv grid @64x64",
                            demo::draw_dcn_taps(display, cvattn::Tensor::zeros(offset.shape()),
                                                cvattn::Tensor(), cells)});
        }
        panels.push_back(
            {"DCNv2 taps @" + runs[k].first + " (dot size = mask)",
             demo::draw_dcn_taps(display, offset, r.maps.at(cvattn::maps::kMask), cells)});
      }
      const std::string stem = file.stem().string();
      for (std::size_t i = 0; i < panels.size(); ++i) {
        demo::write_png(output / stem /
                            (i == 0   ? "regular.png"
                             : i == 1 ? "dcn_64.png"
                                      : "dcn_fullres.png"),
                        panels[i].image);
      }
      demo::write_png(output / (stem + "_deform.png"), viz::contact_sheet(panels, 3));
      index.push_back({file.filename().string(), panels[panels.size() - 1].image});
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
