"""The three Fashion-MNIST networks, built from timm's own layers (timm source tree, see
fashion_common.TIMM_SOURCE) and plain torch, so their state_dicts carry the names cvattn's
modules load (SqueezeExcitation, SelectiveKernel, Cbam, Conv2d, BatchNorm2d, Linear; the STN is
stn_digits.Net, cvattn's StnClassifier).

FashionCnn (fashion_cnn.safetensors), input [N, 1, 28, 28]:
  stem   Conv2d(1, 32, 3, p1, no bias) - BatchNorm2d(32) - ReLU           28x28
  se     timm SEModule(32)  (fc1 32 -> 8 -> fc2 32, sigmoid gate)          "se" map [N, 32]
  pool1  MaxPool2d(2)                                                    14x14
  sk     timm SelectiveKernel(32 -> 64), defaults (two 3x3 paths, dilation 1 and 2,
         split input, attention width 8)                                  "sk" map [N, 2, 64]
  pool2  MaxPool2d(2)                                                     7x7
  conv3  Conv2d(64, 96, 3, p1, no bias) - BatchNorm2d(96) - ReLU
  cbam   timm CbamModule(96) (channel MLP 96 -> 6 -> 96, 7x7 spatial conv + BN)
  global average pooling, head Linear(96, 10)       CAM_k = sum_c head.weight[k, c] cbam_out[c]

FashionVit (fashion_vit.safetensors): timm VisionTransformer(img_size 28, patch 4, in_chans 1,
  embed_dim 64, depth 4, heads 4, mlp_ratio 2, class token, learned position embedding,
  LayerNorm eps 1e-6, GELU) - timm's own key names (patch_embed.proj, cls_token, pos_embed,
  blocks.i.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,mlp.fc2}, norm, head).
"""
import torch
import torch.nn as nn

import fashion_common  # noqa: F401  (puts the timm source tree on sys.path)
from timm.layers.cbam import CbamModule
from timm.layers.selective_kernel import SelectiveKernel
from timm.layers.squeeze_excite import SEModule
from timm.models.vision_transformer import VisionTransformer

WIDTHS = (32, 64, 96)


class FashionCnn(nn.Module):
    def __init__(self):
        super().__init__()
        c1, c2, c3 = WIDTHS
        self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, padding=1, bias=False), nn.BatchNorm2d(c1),
                                  nn.ReLU())
        self.se = SEModule(c1)
        self.sk = SelectiveKernel(c1, c2)
        self.conv3 = nn.Sequential(nn.Conv2d(c2, c3, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(c3), nn.ReLU())
        self.cbam = CbamModule(c3)
        self.head = nn.Linear(c3, 10)

    def features(self, x):
        x = nn.functional.max_pool2d(self.se(self.stem(x)), 2)
        x = nn.functional.max_pool2d(self.sk(x), 2)
        return self.cbam(self.conv3(x))  # [N, 96, 7, 7]

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def fashion_vit():
    return VisionTransformer(img_size=28, patch_size=4, in_chans=1, num_classes=10, embed_dim=64,
                             depth=4, num_heads=4, mlp_ratio=2.0)
