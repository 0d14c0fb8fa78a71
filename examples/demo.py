"""Demo: trains a small MLP regressor on device "tpu" and prints the loss per step and steps/s."""

import time

import torch

import torch_pjrt


def main(steps=30):
    torch.manual_seed(0)
    device = torch.device("tpu")
    print(f"device: {torch.tpu.get_device_name()}")
    x = torch.randn(256, 16)
    y = (x @ torch.randn(16, 1)).tanh() + 0.05 * torch.randn(256, 1)
    x, y = x.to(device), y.to(device)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        opt.zero_grad()
        diff = model(x) - y
        loss = (diff * diff).mean()
        loss.backward()
        opt.step()
        print(f"step {step:3d}  loss {loss.item():.6f}")
    elapsed = time.perf_counter() - start
    print(f"{steps / elapsed:.1f} steps/s over {steps} steps (first steps include compilation)")
    print(torch_pjrt.metrics.report())


if __name__ == "__main__":
    main()
