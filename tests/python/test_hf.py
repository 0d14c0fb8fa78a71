"""Transformers, Accelerate and Diffusers on "tpu", unpatched from the user's side: device_map
"tpu"/"auto", `with torch.device("tpu")`, Accelerator() and Trainer choosing "tpu" with no
environment variable, generate (dynamic and static cache, greedy and sampling), continuous
batching (generate_batch), and a diffusers model, each against CPU PyTorch with no CPU fallback.
Tiny configs with seeded weights; nothing is downloaded."""

import pytest
import torch

transformers = pytest.importorskip("transformers")
accelerate = pytest.importorskip("accelerate")

from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
from transformers.generation.configuration_utils import ContinuousBatchingConfig


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)


def tiny_config():
    return LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny Llama (seeded random weights) saved to a directory; (dir, CPU model)."""
    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_config()).eval()
    path = tmp_path_factory.mktemp("llama")
    model.save_pretrained(path)
    return path, model


PROMPTS = torch.tensor([[5, 9, 13, 2, 7, 30], [8, 8, 41, 3, 22, 17]])


def test_device_map_tpu_and_auto_place_on_tpu(saved, counters):
    path, cpu_model = saved
    expected = cpu_model(PROMPTS).logits
    for device_map in ("tpu", "auto"):
        model = LlamaForCausalLM.from_pretrained(path, device_map=device_map)
        assert {p.device.type for p in model.parameters()} == {"tpu"}, device_map
        logits = model(PROMPTS.to("tpu")).logits
        torch.testing.assert_close(logits.cpu(), expected, rtol=1e-5, atol=1e-5)
    assert set(model.hf_device_map.values()) <= {0, 1, 2, 3}  # "auto": devices by index
    assert counters()["cpu_fallbacks"] == {}


def test_auto_device_map_uses_device_memory(saved):
    from accelerate.utils import get_max_memory

    memory = get_max_memory()
    tpus = [k for k in memory if isinstance(k, int)]
    assert tpus == list(range(torch.tpu.device_count()))
    assert memory[0] == pytest.approx(torch.tpu.mem_get_info(0)[0], rel=0.5)
    # A budget the model does not fit in sends it to the CPU, as on CUDA.
    path, _ = saved
    model = LlamaForCausalLM.from_pretrained(
        path, device_map="auto", max_memory={0: 1, "cpu": "1GiB"}
    )
    assert {p.device.type for p in model.parameters()} == {"cpu"}


def test_device_context_creates_on_tpu():
    with torch.device("tpu"):
        model = LlamaForCausalLM(tiny_config())
    assert {p.device.type for p in model.parameters()} == {"tpu"}


def generate(model, **kwargs):
    out = model.generate(PROMPTS.to(model.device), max_new_tokens=5, pad_token_id=1, **kwargs)
    return out[:, PROMPTS.shape[1] :].cpu()


def test_generate_greedy_dynamic_and_static_cache(saved, counters):
    path, cpu_model = saved
    expected = generate(cpu_model, do_sample=False)
    model = LlamaForCausalLM.from_pretrained(path, device_map="tpu")
    assert generate(model, do_sample=False).tolist() == expected.tolist()
    assert (
        generate(model, do_sample=False, cache_implementation="static").tolist()
        == expected.tolist()
    )
    # sampling restricted to the top token is greedy decoding
    assert generate(model, do_sample=True, top_k=1).tolist() == expected.tolist()
    assert counters()["cpu_fallbacks"] == {}


def test_generate_sampling_is_seeded(saved, counters):
    path, _ = saved
    model = LlamaForCausalLM.from_pretrained(path, device_map="tpu")
    runs = []
    for _ in range(2):
        torch.manual_seed(123)
        runs.append(generate(model, do_sample=True, temperature=1.5, top_k=0))
    assert runs[0].tolist() == runs[1].tolist()
    assert ((runs[0] >= 0) & (runs[0] < 64)).all()
    assert counters()["cpu_fallbacks"] == {}


def test_generate_batch_continuous_batching(saved, counters):
    path, cpu_model = saved
    prompts = [[5, 9, 13, 2], [8, 8, 41, 3, 22, 17], [30, 2]]
    config = GenerationConfig(max_new_tokens=4, do_sample=False, eos_token_id=-1, pad_token_id=1)
    expected = [
        cpu_model.generate(torch.tensor([p]), generation_config=config)[0, len(p) :].tolist()
        for p in prompts
    ]
    model = LlamaForCausalLM.from_pretrained(path, device_map="tpu")
    # A small paged cache: sized from memory, it would take most of the host's (the CPU plugin's).
    small = ContinuousBatchingConfig(num_blocks=4, page_size=16, max_batch_tokens=32)
    outputs = model.generate_batch(
        inputs=prompts, generation_config=config, continuous_batching_config=small
    )
    by_prompt = {tuple(o.prompt_ids): list(o.generated_tokens) for o in outputs.values()}
    assert [by_prompt[tuple(p)] for p in prompts] == expected
    assert counters()["cpu_fallbacks"] == {}


def test_accelerator_and_trainer_choose_tpu(saved, tmp_path, counters):
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from transformers import Trainer, TrainingArguments

    AcceleratorState._reset_state(True)
    assert Accelerator().device.type == "tpu"
    AcceleratorState._reset_state(True)

    torch.manual_seed(1)
    data = [{"input_ids": torch.randint(2, 64, (8,))} for _ in range(8)]
    for item in data:
        item["labels"] = item["input_ids"]

    def train(use_cpu):
        torch.manual_seed(0)
        model = LlamaForCausalLM(tiny_config())
        args = TrainingArguments(
            output_dir=str(tmp_path / str(use_cpu)),
            per_device_train_batch_size=4,
            max_steps=2,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            use_cpu=use_cpu,
            learning_rate=1e-2,
            disable_tqdm=True,
            dataloader_pin_memory=False,
        )
        trainer = Trainer(model=model, args=args, train_dataset=data)
        trainer.train()
        AcceleratorState._reset_state(True)
        device = next(model.parameters()).device.type
        return device, [h["loss"] for h in trainer.state.log_history if "loss" in h]

    device, losses = train(use_cpu=False)
    assert device == "tpu"
    cpu_device, cpu_losses = train(use_cpu=True)
    assert cpu_device == "cpu"
    torch.testing.assert_close(losses, cpu_losses, rtol=1e-4, atol=1e-4)
    assert counters()["cpu_fallbacks"] == {}


def test_diffusers_conditional_unet_matches_cpu(counters):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(16, 32),
        norm_num_groups=8,
        cross_attention_dim=16,
        attention_head_dim=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    ).eval()
    x, t, context = torch.randn(2, 4, 8, 8), torch.tensor([10, 500]), torch.randn(2, 5, 16)
    with torch.no_grad():
        expected = unet(x, t, context).sample
        got = unet.to("tpu")(x.to("tpu"), t.to("tpu"), context.to("tpu")).sample
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)
    assert counters()["cpu_fallbacks"] == {}
