"""What the programs we emit contain, where benchmarks/xla_floor.py found a difference with the
JAX program of the same model: each test pins one fix (docs/benchmarks.md, "The XLA floor")."""

import math
import re

import torch
import torch.nn.functional as F
from models import GPT

import torch_pjrt


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


def test_compiled_optimizer_updates_its_state_in_place(tmp_path, monkeypatch):
    # JAX donates a training step's parameters and optimizer states to their new values; the
    # compiled AdamW step wrote new buffers beside the old ones (aot_autograd copied each result
    # back), so a step needed the parameters and both moments twice over.
    torch.manual_seed(0)
    n = 1 << 18  # 1 MiB per tensor
    p = torch.nn.Parameter(torch.randn(n, device="tpu"))
    ref = torch.nn.Parameter(p.detach().cpu().clone())
    opt, ref_opt = torch.optim.AdamW([p], lr=1e-2), torch.optim.AdamW([ref], lr=1e-2)
    monkeypatch.setenv("TORCH_PJRT_DUMP_DIR", str(tmp_path))
    step = torch.compile(opt.step, backend="tpu")
    for i in range(3):
        g = torch.randn(n)
        p.grad, ref.grad = g.to("tpu"), g
        torch.tpu.synchronize()
        torch.tpu.reset_peak_memory_stats()
        before = torch.tpu.memory_allocated()
        step()
        ref_opt.step()
        torch.tpu.synchronize()
        if i > 0:  # the first call runs on the traced arguments, which are not donated
            assert torch.tpu.max_memory_allocated() - before < (1 << 20)
    torch.testing.assert_close(p.detach().cpu(), ref.detach(), rtol=1e-5, atol=1e-6)
    (text,) = [f.read_text() for f in tmp_path.iterdir() if f.name.endswith(".stablehlo.mlir")]
    assert text.count("tf.aliasing_output") == 4  # the parameter, both moments, the step count


def test_an_old_value_still_read_is_not_donated():
    # A donated buffer is gone after the call: a pending Fused op or a value read elsewhere that
    # still needs the parameter's old value keeps it (the plugin gives the result new memory).
    import torch_pjrt

    p = torch.nn.Parameter(torch.ones(1 << 16, device="tpu"))
    opt = torch.optim.SGD([p], lr=0.5)
    step = torch.compile(opt.step, backend="tpu")
    with torch_pjrt.eager_mode("fused"):
        for i in range(3):
            p.grad = torch.ones_like(p)
            old = p * 2  # pending: reads the value the step replaces
            head = p.detach()[:4]  # a view of the same storage sees the update
            step()
            torch.testing.assert_close(old.cpu(), torch.full((1 << 16,), 2.0 - i))
            torch.testing.assert_close(head.cpu(), torch.full((4,), 0.5 - 0.5 * i))
    torch.testing.assert_close(p.detach().cpu(), torch.full((1 << 16,), -0.5))


def test_rotate_half_reads_without_padding(tmp_path, monkeypatch):
    # A rotary embedding's rotate_half reads the second half of every row, a view whose block
    # from its offset runs past the storage's end; it padded the whole storage first (16 pads of
    # 0.8 MB in the 100M Llama's forward), where JAX slices.
    def rotate_half(x):
        return torch.cat((-x[..., x.shape[-1] // 2 :], x[..., : x.shape[-1] // 2]), dim=-1)

    x = torch.randn(2, 4, 8, 16)
    out, text = _compiled_program(rotate_half, (x.to("tpu"),), tmp_path, monkeypatch)
    torch.testing.assert_close(out.cpu(), rotate_half(x))
    assert '"stablehlo.pad"' not in text
    assert '"stablehlo.gather"' not in text


def test_attention_softmax_reduces_each_row_twice(tmp_path, monkeypatch):
    # scaled_dot_product_attention's softmax (_safe_softmax) gives 0 for rows that mask out every
    # key. Decomposed, it compared every score with -inf and reduced the comparisons per row, two
    # more passes over the scores per layer than JAX's softmax, the second a pred reduction that
    # XLA's CPU backend runs as a reduce-window (the 100M Llama's compiled forward: 1.10x JAX).
    # Now the softmax's own maximum and sum find those rows.
    q, k, v = (
        torch.randn(2, 3, 8, 16, generator=torch.Generator().manual_seed(i)) for i in range(3)
    )
    mask = torch.full((8, 8), -math.inf).triu(1)  # causal, additive, as Transformers builds it
    mask[0] = -math.inf  # the first query sees no key

    def attention(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    expected = attention(q, k, v, mask)
    args = tuple(t.to("tpu") for t in (q, k, v, mask))
    out, text = _compiled_program(attention, args, tmp_path, monkeypatch)
    assert (expected[:, :, 0] == 0).all()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    assert text.count('"stablehlo.reduce"') == 2  # the rows' maxima and sums


def test_compiled_scalars_are_constants(tmp_path, monkeypatch):
    # A compiled graph's Python scalars (RMSNorm's exponent 2 and epsilon, the rotary scaling 1.0)
    # reached its program as a packed f64 argument, as eager programs' scalars do so that new
    # values reuse the program; XLA could not fold them: pow(x, 2) with a runtime exponent ran
    # as a general power per element, 17 times over the 100M Llama's activations (most of its
    # compiled forward's 1.11x JAX, docs/benchmarks.md). A graph's scalars are fixed: constants.
    def rms_norm(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    x, w = torch.randn(4, 32), torch.randn(32)
    out, text = _compiled_program(rms_norm, (x.to("tpu"), w.to("tpu")), tmp_path, monkeypatch)
    torch.testing.assert_close(out.cpu(), rms_norm(x, w))
    assert "xf64>" not in text  # no packed scalars argument
    assert "power(" not in torch.tpu.optimized_hlo(text)  # folded into a multiply


def _gathers_and_scatters(text):
    """(slice_sizes, start indices type) of each gather, (update_window_dims, indices type) of
    each scatter in `text` (generic syntax: attributes, then the operand types)."""
    gathers = re.findall(
        r'"stablehlo\.gather"\(.*?slice_sizes = array<i64: ([\d, ]+)>.*?\(tensor<[^>]*>, '
        r"(tensor<[^>]*>)\)",
        text,
    )
    scatters = re.findall(
        r'"stablehlo\.scatter"\(.*?update_window_dims = \[([\d, ]*)\].*?\(tensor<[^>]*>, '
        r"(tensor<[^>]*>), tensor",
        text,
        flags=re.DOTALL,
    )
    return gathers, scatters


def test_embedding_gathers_and_scatters_rows(tmp_path, monkeypatch):
    # aten.embedding (index_select of the weight's rows) lowered to a gather of single elements,
    # one index pair per token and hidden unit (196,608 for the 100M Llama's 256 tokens x 768),
    # where JAX gathers 256 rows of 768. Now one start index per token and a window of the whole
    # row, in eager and compiled programs; the backward ops scatter rows.
    w = torch.randn(64, 32)
    words = torch.randint(0, 64, (2, 8))
    expected = F.embedding(words, w)
    tw, twords = w.to("tpu"), words.to("tpu")
    row_gather = [("1, 32", "tensor<16x1xi64>")]
    with torch_pjrt.eager_mode("strict"):
        out = F.embedding(twords, tw)
        assert _gathers_and_scatters(torch.tpu.last_program_stablehlo())[0] == row_gather
        torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)
        grad = torch.randn(2, 8, 32)
        dense = torch.ops.aten.embedding_dense_backward(grad.to("tpu"), twords, 64, 0, False)
        assert _gathers_and_scatters(torch.tpu.last_program_stablehlo())[1] == [
            ("1", "tensor<16xi64>")
        ]
        torch.testing.assert_close(
            dense.cpu(), torch.ops.aten.embedding_dense_backward(grad, words, 64, 0, False)
        )
        src = torch.randn(64, 8)  # index_select's backward along dim 1
        cols = words[0] % 32
        added = tw.index_add(1, cols.to("tpu"), src.to("tpu"))
        assert _gathers_and_scatters(torch.tpu.last_program_stablehlo())[1] == [
            ("0", "tensor<8x1xi64>")
        ]
        torch.testing.assert_close(added.cpu(), w.index_add(1, cols, src), rtol=0, atol=0)
    out, text = _compiled_program(F.embedding, (twords, tw), tmp_path, monkeypatch)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)
    assert _gathers_and_scatters(text)[0] == row_gather


def _f64_pack_size(text):
    """Host scalars an eager program takes: the length of its f64 argument pack (0 without one)."""
    packs = re.findall(r"%arg\d+: tensor<(\d+)xf64>", text)
    return int(packs[0]) if packs else 0


def test_foreach_op_passes_one_scalar_for_all_its_tensors():
    # An optimizer's list ops took one host scalar per tensor (AdamW on the small GPT: 209 in one
    # Fused step, 20 after); equal scalars of one list op now share one program argument.
    torch.manual_seed(0)
    base = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2)]

    def run(device, ops):
        ts = [t.clone().to(device) for t in base]
        ops(ts)
        if device == "tpu":
            torch_pjrt.launch_pending()
            text = torch_pjrt.introspection.last_program_stablehlo()
            return [t.cpu() for t in ts], text
        return ts, None

    cases = {
        "scalar": (lambda ts: torch._foreach_mul_(ts, 0.9), 1),
        "equal list": (lambda ts: torch._foreach_add_(ts, [0.25, 0.25, 0.25]), 1),
        "distinct list": (lambda ts: torch._foreach_add_(ts, [0.5, 1.5, 0.5]), 2),
        # 0.0 and -0.0 are different scalars: x * -0.0 keeps its sign rule
        "signed zeros": (lambda ts: torch._foreach_mul_(ts, [0.0, -0.0, 0.0]), 2),
    }
    with torch_pjrt.eager_mode("fused"):
        for name, (ops, scalars) in cases.items():
            expected, _ = run("cpu", ops)
            got, text = run("tpu", ops)
            for e, g in zip(expected, got):
                torch.testing.assert_close(g, e, rtol=0, atol=0)
                assert torch.equal(torch.signbit(g), torch.signbit(e)), name
            assert _f64_pack_size(text) == scalars, name
