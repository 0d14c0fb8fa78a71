"""Exact view semantics: strided reads, writes through views, aliasing, resize_ and set_."""

import pytest
import torch
from conftest import assert_same

import torch_pjrt


def test_transpose_slice_select_expand_reads():
    c = torch.arange(24.0).reshape(2, 3, 4)
    x = c.to("tpu")
    assert_same(x.transpose(0, 2), c.transpose(0, 2))
    assert_same(x[:, 1:, ::2], c[:, 1:, ::2])
    assert_same(x[1, :, 2], c[1, :, 2])
    assert_same(x[:, :1].expand(2, 5, 4), c[:, :1].expand(2, 5, 4))
    assert_same(x.permute(2, 0, 1).contiguous(), c.permute(2, 0, 1).contiguous())
    assert_same(x.view(6, 4)[2:], c.view(6, 4)[2:])
    assert_same(x.reshape(-1)[5:17:3], c.reshape(-1)[5:17:3])
    assert_same(x.t() if x.dim() == 2 else x.flatten(1).t(), c.flatten(1).t())


def test_writes_through_views_change_the_base():
    c = torch.arange(12.0).reshape(3, 4)
    x = c.to("tpu")
    for view_fn in (
        lambda t: t[:, 1],
        lambda t: t[1:, ::2],
        lambda t: t.t()[2],
        lambda t: t.view(-1)[3:7],
        lambda t: t[2],
    ):
        view_fn(x).mul_(10)
        view_fn(c).mul_(10)
        assert_same(x, c)
    x[0, 0] = -1
    c[0, 0] = -1
    assert_same(x, c)
    x[:, 2:] = torch.tensor([7.0, 8.0]).to("tpu")
    c[:, 2:] = torch.tensor([7.0, 8.0])
    assert_same(x, c)


def test_views_share_storage_after_in_place_on_base():
    x = torch.zeros(4, 4, device="tpu")
    row = x[2]
    col = x[:, 1]
    x.add_(1)
    x[2, 1] = 5
    assert torch.equal(row.cpu(), torch.tensor([1.0, 5.0, 1.0, 1.0]))
    assert torch.equal(col.cpu(), torch.tensor([1.0, 1.0, 5.0, 1.0]))
    assert row.data_ptr() == x.data_ptr() + 8 * x.element_size()
    assert x.untyped_storage().data_ptr() == col.untyped_storage().data_ptr()


def test_copy_between_overlapping_views():
    c = torch.arange(10.0)
    x = c.to("tpu")
    x[1:].copy_(x[:-1].clone())
    c[1:].copy_(c[:-1].clone())
    assert_same(x, c)
    y = torch.arange(9.0).reshape(3, 3)
    t = y.to("tpu")
    # Without a clone, a copy between partly overlapping views is refused, as on the CPU.
    for dst in (t, y):
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            dst.copy_(dst.t())
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            dst.view(-1)[1:].copy_(dst.view(-1)[:-1])
    assert_same(t, y)
    t.copy_(t.t().clone())
    y.copy_(y.t().clone())
    assert_same(t, y)


def test_cpu_to_strided_tpu_destination_and_dtype_conversion():
    x = torch.zeros(3, 4, device="tpu")
    x.t()[1:3].copy_(torch.arange(6, dtype=torch.int64).reshape(2, 3))
    c = torch.zeros(3, 4)
    c.t()[1:3].copy_(torch.arange(6, dtype=torch.int64).reshape(2, 3))
    assert_same(x, c)
    host = torch.empty(4, 3, dtype=torch.float64).t()
    host.copy_(x)
    assert torch.equal(host, c.double())


def test_resize_and_set():
    x = torch.arange(4.0).to("tpu")
    x.resize_(2, 3)
    assert x.shape == (2, 3)
    assert torch.equal(x.view(-1)[:4].cpu(), torch.arange(4.0))
    y = torch.empty(0, device="tpu")
    y.set_(x)
    assert y.shape == x.shape and y.data_ptr() == x.data_ptr()
    y.fill_(9)
    assert torch.equal(x.cpu(), torch.full((2, 3), 9.0))
    z = torch.empty(0, device="tpu")
    z.set_(x.untyped_storage(), 2, (2,), (1,))
    assert torch.equal(z.cpu(), torch.full((2,), 9.0))
    z.set_()
    assert z.numel() == 0


def test_clone_and_contiguous_are_independent():
    x = torch.arange(6.0).reshape(2, 3).to("tpu")
    y = x.t().contiguous()
    x.zero_()
    assert torch.equal(y.cpu(), torch.arange(6.0).reshape(2, 3).t())


def test_untyped_storage_resize_keeps_prefix_and_frees():
    x = torch.arange(4.0).to("tpu")
    storage = x.untyped_storage()
    storage.resize_(32)
    assert storage.nbytes() == 32
    grown = torch.empty(0, device="tpu").set_(storage, 0, (8,), (1,))
    assert torch.equal(grown.cpu(), torch.tensor([0.0, 1, 2, 3, 0, 0, 0, 0]))
    storage.resize_(0)
    assert storage.nbytes() == 0


def _storage_slice_story(device, mode):
    # A slice of an UntypedStorage at a nonzero offset is a storage whose data pointer lies inside
    # the other's: reads, writes in both directions, a slice of a slice, copy-on-write.
    with torch_pjrt.eager_mode(mode):
        v = torch.arange(15, dtype=torch.float32, device=device).reshape(3, 5)
        s = v.untyped_storage()
        piece = s[8:16]
        story = [list(piece), piece.data_ptr() - s.data_ptr(), list(s[8:24][4:8])]
        t = torch.tensor([], device=device).set_(piece)  # two float32 elements
        story.append(t.tolist())
        t.mul_(10)
        story.append(v.tolist())
        piece[1] = 7
        piece[4:8].fill_(0)
        story += [v.tolist(), t.tolist(), list(s[4:8].cpu())]
        x = torch.ones(4, device=device)
        y = torch._lazy_clone(x)
        torch.tensor([], device=device).set_(y.untyped_storage()[4:8]).fill_(5)
        story += [x.tolist(), y.tolist()]
    return story


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_untyped_storage_slices_read_and_write_the_storage(mode):
    # Issue 37: upstream test_torch's test_storage (byte slices of a tensor's storage).
    assert _storage_slice_story("tpu", mode) == _storage_slice_story("cpu", mode)
    piece = torch.zeros(3, device="tpu").untyped_storage()[2:10]
    with pytest.raises(NotImplementedError, match="starts 2 bytes into its storage"):
        torch.tensor([], device="tpu").set_(piece).cpu()


def test_view_offsets_are_runtime_arguments():
    # x[i] in a loop: the views differ only in storage offset, which programs take at run time, so
    # the loop compiles a few programs however many rows it walks (it compiled two per row when
    # the offset was an attribute), and reads and writes stay exact.
    from torch_pjrt import metrics

    c = torch.arange(40 * 6, dtype=torch.float32).reshape(40, 6)
    x = c.to("tpu")
    start = metrics.counters()["compiles"]
    for i in range(40):
        x[i] += i  # contiguous row: dynamic slice and dynamic update slice
        c[i] += i
        x[:, i % 6].mul_(2)  # strided column: gather and scatter from a runtime offset
        c[:, i % 6].mul_(2)
    assert_same(x, c)
    assert metrics.counters()["compiles"] - start <= 8
    for i in range(6):  # other layouts at moving offsets
        x.t()[i, i:] -= 1
        c.t()[i, i:] -= 1
        assert_same(x[i + 1, i].expand(3, 2), c[i + 1, i].expand(3, 2))
        assert_same(x[i:, 1::2], c[i:, 1::2])
    assert_same(x, c)


def test_lazy_clone_is_an_independent_copy_with_the_same_layout():
    """torch._lazy_clone (copy-on-write on the CPU): same sizes, strides and storage offset, values
    independent of the original's after a write to either, gradients pass through (issue 37)."""
    results = []
    for device in ("cpu", "tpu"):
        base = torch.arange(12.0, device=device).view(3, 4)
        x = base.t()[1:]
        y = torch._lazy_clone(x)
        layout = (y.shape, y.stride(), y.storage_offset())
        y.add_(100)
        x.mul_(2)
        leaf = torch.ones(2, 3, device=device, requires_grad=True)
        (torch._lazy_clone(leaf) * 3).sum().backward()
        results.append((layout, x.cpu(), y.cpu(), base.cpu(), leaf.grad.cpu()))
    cpu, tpu = results
    assert tpu[0] == cpu[0]
    for a, b in zip(tpu[1:], cpu[1:]):
        assert torch.equal(a, b)


def _cow_story(device, mode):
    """What copy-on-write looks like on `device` through a lazy clone, writes to either side, a
    binary op that reads both, and a clone of a clone: is_cow, data addresses, values."""
    out = []
    with torch_pjrt.eager_mode(mode):
        t = torch.tensor([[0, 1], [2, 3]], device=device, dtype=torch.float32)
        storage, data = torch._C._storage_address(t), torch._C._data_address(t)
        clone = t._lazy_clone()
        again = clone._lazy_clone()
        view = t.view(4)
        _ = t + clone  # reading materializes nothing
        out.append([torch._C._is_cow_tensor(x) for x in (t, clone, again, view)])
        out.append([torch._C._data_address(x) == data for x in (t, clone, again, view)])
        out.append(torch._C._storage_address(clone) != storage)
        view += 1  # materializes t's storage (view shares it), not the clones'
        out.append([torch._C._is_cow_tensor(x) for x in (t, clone, again, view)])
        out.append([torch._C._data_address(x) == data for x in (t, clone, again, view)])
        clone.mul_(10)
        again.sub_(1)  # the last reference: takes the original data without a copy
        out.append([torch._C._is_cow_tensor(x) for x in (t, clone, again)])
        out.append(torch._C._data_address(again) == data)
        out.append([x.cpu().tolist() for x in (t, clone, again)])
    return out


@pytest.mark.parametrize("mode", ["debug", "strict", "fused"])
def test_lazy_clone_is_copy_on_write_as_on_the_cpu(mode):
    # c10's COW storages over our slots: the same answers as the CPU's (issue 37: upstream
    # test_torch's test_lazy_clone*). A write to either side must not reach the other.
    assert _cow_story("tpu", mode) == _cow_story("cpu", mode)


def test_is_set_to_answers_as_on_the_cpu():
    # Metadata only: the same storage, offset, sizes and strides (it used to run through the CPU
    # fallback, whose copies never alias, and answer False even for a tensor and itself).
    def answers(device):
        t1 = torch.empty(3, 4, device=device)
        t3 = torch.tensor([], device=device).set_(t1)
        return [
            t1.is_set_to(t1), t1.is_set_to(t3), t3.is_set_to(t1),
            t1.is_set_to(torch.empty(3, 4, device=device)), t1.is_set_to(t1.view(4, 3)),
            t1.is_set_to(t3.clone()), t1[1:].is_set_to(t3[1:]),
        ]  # fmt: skip

    assert answers("tpu") == answers("cpu") == [True, True, True, False, False, False, True]
