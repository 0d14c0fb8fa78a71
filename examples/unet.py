"""A diffusers `UNet2DModel` trained as a DDPM denoiser on "tpu" (synthetic images: soft discs of
random position, size and colour), then sampled with `DDPMPipeline(...).to("tpu")`. The
pipeline's noise comes from a seeded CPU generator, so the samples can be compared across devices.

    python examples/unet.py
    python examples/unet.py --compile --image-size 32 --inference-steps 50
"""

import sys

import common
import torch
import torch.nn.functional as F
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel


def synthetic_images(n, size, g):
    """Soft discs on a dark background, in [-1, 1]."""
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
    centre = torch.rand(n, 2, 1, 1, generator=g) * 1.2 - 0.6
    radius = torch.rand(n, 1, 1, generator=g) * 0.4 + 0.2
    colour = torch.rand(n, 3, 1, 1, generator=g) * 2 - 1
    dist = ((xs - centre[:, 0]) ** 2 + (ys - centre[:, 1]) ** 2).sqrt()
    disc = torch.sigmoid((radius - dist) * 20).unsqueeze(1)
    return disc * colour + (1 - disc) * -0.8


def main(argv=None):
    p = common.parser(__doc__.splitlines()[0], steps=20, batch_size=16)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--channels", type=int, nargs="+", default=[32, 64, 64])
    p.add_argument("--train-timesteps", type=int, default=1000)
    p.add_argument("--inference-steps", type=int, default=20)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args(argv)
    device = common.setup(args)
    blocks = len(args.channels)
    unet = UNet2DModel(
        sample_size=args.image_size,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=tuple(args.channels),
        down_block_types=("DownBlock2D",) * (blocks - 1) + ("AttnDownBlock2D",),
        up_block_types=("AttnUpBlock2D",) + ("UpBlock2D",) * (blocks - 1),
        norm_num_groups=8,
    ).to(device)
    scheduler = DDPMScheduler(num_train_timesteps=args.train_timesteps)
    opt = torch.optim.AdamW(unet.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed)
    batches = []
    for _ in range(args.steps):
        images = synthetic_images(args.batch_size, args.image_size, g)
        noise = torch.randn(images.shape, generator=g)
        t = torch.randint(0, args.train_timesteps, (args.batch_size,), generator=g)
        noisy = scheduler.add_noise(images, noise, t)  # on the CPU: the data pipeline's work
        batches.append((noisy.to(device), noise.to(device), t.to(device)))

    def loss_fn(model, batch):
        noisy, noise, t = batch
        return F.mse_loss(model(noisy, t).sample.float(), noise)

    unet.train()
    step = common.optimizer_step(unet, opt, loss_fn, args)
    result = common.train(step, batches, args, device, "images")
    if args.samples == 0:
        return result
    unet.eval()
    pipeline = DDPMPipeline(unet=unet, scheduler=scheduler).to(device)
    pipeline.set_progress_bar_config(disable=args.quiet)
    with common.autocast(args):
        images = pipeline(
            batch_size=args.samples,
            generator=torch.Generator().manual_seed(args.seed),
            num_inference_steps=args.inference_steps,
            output_type="np",
        ).images
    result["images"] = torch.from_numpy(images)
    if not args.quiet:
        print(f"sampled {images.shape[0]} images {images.shape[1:]}, mean {images.mean():.3f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
