// Builds against the installed package: runs a conv2d on a blob made by OpenCV, and registers the
// cv::dnn custom layers and instantiates one through OpenCV's layer factory.
#include <cmath>
#include <cstdio>
#include <cvattn/cvattn.hpp>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

int main() {
  namespace F = cvattn::functional;
  cv::Mat image(8, 8, CV_8UC3, cv::Scalar(10, 20, 30));
  const cvattn::Tensor x = cvattn::from_image(image, cvattn::ImageOptions().scale(1.0 / 255));
  const cvattn::Tensor w = cvattn::Tensor::full({1, 3, 1, 1}, 1.0f);
  const cvattn::Tensor y = F::conv2d(x, w);
  const float expected = 60.0f / 255.0f;
  std::printf("consumer: cvattn %s, y[0] = %f (expected %f)\n", CVATTN_VERSION_STRING, y[0],
              expected);

  cvattn::dnn::registerLayers();
  cv::dnn::LayerParams params;
  params.name = "gs";
  params.type = "GridSample";
  const cv::Ptr<cv::dnn::Layer> layer =
      cv::dnn::LayerFactory::createLayerInstance(params.type, params);
  std::printf("consumer: cv::dnn layer '%s' of type %s\n", layer ? layer->name.c_str() : "-",
              layer ? layer->type.c_str() : "-");
  return std::abs(y[0] - expected) < 1e-6f && layer && layer->type == "GridSample" ? 0 : 1;
}
