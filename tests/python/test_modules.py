"""nn.Module on "tpu": Parameter identity and tied weights survive .to(), and an MLP trains like CPU."""

import copy

import torch


def test_module_to_keeps_parameter_identity_and_ties():
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight  # tied, as in language models
    model = torch.nn.ModuleDict({"emb": emb, "head": head})
    param = model["emb"].weight
    model.to("tpu")
    assert model["emb"].weight is param
    assert model["head"].weight is model["emb"].weight
    assert param.device.type == "tpu"
    model.to("cpu")
    assert model["emb"].weight is param and param.device.type == "cpu"


def _train(model, x, y, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        diff = model(x) - y
        loss = (diff * diff).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_mlp_training_matches_cpu(counters):
    torch.manual_seed(0)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    tpu_model = copy.deepcopy(model).to("tpu")
    cpu_losses = _train(model, x, y, 10)
    tpu_losses = _train(tpu_model, x.to("tpu"), y.to("tpu"), 10)
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=0)
    assert cpu_losses[-1] < cpu_losses[0]
    assert counters()["cpu_fallbacks"] == {}
    for p_cpu, p_tpu in zip(model.parameters(), tpu_model.parameters()):
        torch.testing.assert_close(p_tpu.cpu(), p_cpu, rtol=1e-4, atol=1e-5)
