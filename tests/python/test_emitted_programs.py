"""What the programs we emit contain, where benchmarks/xla_floor.py found a difference with the
JAX program of the same model: each test pins one fix (docs/benchmarks.md, "The XLA floor")."""

import torch
from models import GPT


def _compiled_program(fn, args, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("TORCH_PJRT_DUMP_DIR", str(dump))
    out = torch.compile(fn, backend="tpu")(*args)
    texts = [p.read_text() for p in dump.iterdir() if p.name.endswith(".stablehlo.mlir")]
    assert len(texts) == 1
    return out, texts[0]


def test_attention_head_views_are_slices_not_gathers(tmp_path, monkeypatch):
    # The q/k/v split of the fused projection, viewed as heads and transposed, is a strided view
    # of the projection's output; it lowered to a gather of computed element indices (one per
    # view, 40 in the large GPT's forward), JAX's program to slices.
    torch.manual_seed(0)
    model = GPT(vocab=64, d=32, heads=4, layers=2, seq=16).eval()
    idx = torch.randint(0, 64, (2, 16))
    with torch.no_grad():
        expected = model(idx)
        out, text = _compiled_program(
            lambda m, x: m(x), (model.to("tpu"), idx.to("tpu")), tmp_path, monkeypatch
        )
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)
    assert text.count('"stablehlo.gather"') == 2  # the two embeddings
    assert '"stablehlo.slice"' in text


def test_compiled_adamw_keeps_its_step_counters_on_the_device():
    # Dynamo makes an optimizer capturable only for CUDA/XPU parameters; on "tpu" its step
    # counters stayed on the CPU, uploaded and read back in every compiled step.
    import torch_pjrt

    torch.manual_seed(0)
    model = GPT(vocab=64, d=32, heads=4, layers=1, seq=16)
    idx = torch.randint(0, 64, (2, 16))
    losses = {}
    for device in ("cpu", "tpu"):
        m = GPT(vocab=64, d=32, heads=4, layers=1, seq=16).to(device)
        m.load_state_dict(model.state_dict())
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        x = idx.to(device)

        def step(m=m, opt=opt, x=x):
            opt.zero_grad(set_to_none=True)
            loss = m(x).logsumexp(-1).mean()
            loss.backward()
            opt.step()
            return loss

        if device == "tpu":
            step = torch.compile(step, backend="tpu")
        losses[device] = [step().item() for _ in range(2)]
        if device == "tpu":
            before = torch_pjrt.metrics.counters()
            losses[device] += [step().item() for _ in range(2)]
            after = torch_pjrt.metrics.counters()
            assert after["host_to_device_bytes"] == before["host_to_device_bytes"]
            assert opt.param_groups[0]["capturable"] is True
            assert all(s["step"].device.type == "tpu" for s in opt.state.values())
        else:
            losses[device] += [step().item() for _ in range(2)]
    torch.testing.assert_close(
        torch.tensor(losses["tpu"]), torch.tensor(losses["cpu"]), rtol=1e-4, atol=1e-5
    )
