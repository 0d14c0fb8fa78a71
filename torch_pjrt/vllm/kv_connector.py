"""vLLM's KV connectors (prefill/decode disaggregation, `kv_transfer_config`) on "tpu".

A connector reads and writes each attention layer's `kv_cache` as vLLM's standard per-layer view,
[blocks, heads, block positions, channels]. This platform's caches are [blocks, block positions,
2 * kv heads, head size] (attention.py), so with a connector configured the layers hold the
transposed view of their cache, [blocks, 2 * kv heads, block positions, head size] (keys at even
and values at odd heads), and the attention turns it back: both are views of one tensor, so what
a connector writes is what the attention reads.

The start-up walk's made-up steps carry the metadata of an empty step, built by a scheduler-side
instance of the configured connector: a step without metadata is refused, and one with the
walk's requests in it would store their made-up KV through the connector."""

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.core.sched.output import SchedulerOutput


def connector_views(kv_caches):
    """The per-layer views a connector reads and writes, from this platform's caches."""
    return {name: cache.transpose(1, 2) for name, cache in kv_caches.items()}


def from_connector_view(kv_cache):
    """This platform's layout again, from a layer's connector view (a view of the same tensor)."""
    return kv_cache.transpose(1, 2)


def empty_step_metadata(runner):
    """The configured connector's metadata for a step with no requests of its own; None without
    a connector."""
    if not has_kv_transfer_group():
        return None
    if getattr(runner, "_tpu_walk_connector", None) is None:
        runner._tpu_walk_connector = KVConnectorFactory.create_connector(
            runner.vllm_config, KVConnectorRole.SCHEDULER, runner.kv_cache_config
        )
    return runner._tpu_walk_connector.build_connector_meta(SchedulerOutput.make_empty())
