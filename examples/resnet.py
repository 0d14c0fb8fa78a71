"""ResNet-18/50 image classification on "tpu", on synthetic images (each class a fixed random
pattern plus noise). The ResNets are written here (torchvision's PyPI build is a CUDA build that
does not load beside the CPU torch). Trains with SGD + momentum, then reports the accuracy on a
held-out batch in eval mode.

    python examples/resnet.py                         # ResNet-18, 64x64 images
    python examples/resnet.py --arch resnet50 --compile
    python examples/resnet.py --width 8 --image-size 32 --steps 5
"""

import sys

import common
import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.shortcut = shortcut(cin, width, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = shortcut(cin, cout, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return F.relu(self.bn3(self.conv3(out)) + self.shortcut(x))


def shortcut(cin, cout, stride):
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block, depths, num_classes, width=64):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], width
        for i, depth in enumerate(depths):
            for j in range(depth):
                stride = 2 if i > 0 and j == 0 else 1
                layers.append(block(cin, width * 2**i, stride))
                cin = width * 2**i * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


ARCHS = {"resnet18": (BasicBlock, [2, 2, 2, 2]), "resnet50": (Bottleneck, [3, 4, 6, 3])}


def synthetic_images(n, classes, size, g, patterns):
    labels = torch.randint(0, classes, (n,), generator=g)
    images = patterns[labels] + 0.5 * torch.randn(n, 3, size, size, generator=g)
    return images, labels


def main(argv=None):
    p = common.parser(__doc__.splitlines()[0], steps=20, batch_size=32)
    p.add_argument("--arch", default="resnet18", choices=sorted(ARCHS))
    p.add_argument("--width", type=int, default=64, help="channels of the first stage")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args(argv)
    device = common.setup(args)
    block, depths = ARCHS[args.arch]
    model = ResNet(block, depths, args.classes, args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    g = torch.Generator().manual_seed(args.seed)
    patterns = torch.randn(args.classes, 3, args.image_size, args.image_size, generator=g)
    batches = [
        tuple(
            t.to(device)
            for t in synthetic_images(args.batch_size, args.classes, args.image_size, g, patterns)
        )
        for _ in range(args.steps)
    ]

    def loss_fn(m, batch):
        images, labels = batch
        return F.cross_entropy(m(images), labels)

    model.train()
    step = common.optimizer_step(model, opt, loss_fn, args)
    result = common.train(step, batches, args, device, "images")
    model.eval()
    images, labels = synthetic_images(args.batch_size, args.classes, args.image_size, g, patterns)
    with torch.no_grad(), common.autocast(args):
        logits = model(images.to(device)).float().cpu()
    result["logits"] = logits
    result["accuracy"] = (logits.argmax(1) == labels).float().mean().item()
    if not args.quiet:
        print(f"held-out accuracy: {result['accuracy']:.3f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
