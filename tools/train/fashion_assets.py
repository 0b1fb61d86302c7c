"""Bundles Fashion-MNIST test images for the samples, with labels and PyTorch's predictions:

  assets/fashion/fashion_XX.png       30 test images (3 per class, the first of each in test
                                      order), 28x28 gray; labels.json: label, class name and the
                                      prediction of fashion_cnn (and fashion_vit when shipped)
  assets/fashion_rts/rts_XX.png       24 images of the RTS-distorted test set (stn_fashion.py's
                                      fixed distortions); labels.json: label and the prediction
                                      of stn_fashion

Run after the trainers: /usr/bin/python3 tools/train/fashion_assets.py
"""
import json
import os

import numpy as np
import torch
from PIL import Image

import fashion_common as fc
import fashion_eval as fe
import stn_digits as sd
import stn_fashion
import train_common as tc
from fashion_models import FashionCnn, fashion_vit


def predict(model, pixels):
    with torch.no_grad():
        return model(torch.from_numpy(pixels.astype(np.float32) / 255)[:, None]).argmax(1)


def write(folder, stem, pixels, labels, predictions):
    out = os.path.join(tc.ASSETS, folder)
    os.makedirs(out, exist_ok=True)
    meta = {"classes": fc.CLASSES}
    for k in range(len(pixels)):
        name = f"{stem}_{k:02d}.png"
        Image.fromarray(pixels[k], mode="L").save(os.path.join(out, name))
        entry = {"label": int(labels[k]), "class": fc.CLASSES[labels[k]]}
        for model, pred in predictions.items():
            entry[model + "_prediction"] = int(pred[k])
        meta[name] = entry
    with open(os.path.join(out, "labels.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def main():
    torch.set_num_threads(1)
    images, labels = fc.load("t10k")
    pick = np.concatenate([np.flatnonzero(labels == c)[:3] for c in range(10)])
    pixels = images[pick]
    preds = {"fashion_cnn": predict(fe.load(FashionCnn(), "fashion_cnn"), pixels)}
    if os.path.exists(os.path.join(tc.WEIGHTS, "fashion_vit.safetensors")):
        preds["fashion_vit"] = predict(fe.load(fashion_vit(), "fashion_vit"), pixels)
    write("fashion", "fashion", pixels, labels[pick], preds)

    x, y = fc.rts_test_set(stn_fashion.TEST_SEED)
    sel = np.sort(np.random.default_rng(stn_fashion.TEST_SEED + 1).choice(len(x), 24,
                                                                          replace=False))
    rts_pixels = np.round(x[sel, 0].numpy() * 255).astype(np.uint8)
    stn = fe.load(sd.Net(True), "stn_fashion")
    write("fashion_rts", "rts", rts_pixels, y[sel], {"stn": predict(stn, rts_pixels)})


if __name__ == "__main__":
    main()
