"""`vllm bench serve` (vLLM's own load client) with one output-token count for every server, and
a mode for `transformers serve`.

    python benchmarks/bench_client.py [--transformers] bench serve ARGS...

The client counts a request's output tokens from the server's usage only when the usage comes in
a chunk of its own (vLLM's way); `transformers serve` sends it with the last text, so the client
re-tokenizes the streamed text instead, which counts byte-level pieces differently. The servers
benchmarked here generate exactly the requested number of tokens (vLLM ignores EOS, the model
given to `transformers serve` has none), so every successful request counts as that many, for
both. `--transformers` also drops the request fields `transformers serve` refuses with a 422
(`ignore_eos`, `repetition_penalty`, a null `logprobs`), which the client always sends.
"""

import sys

import vllm.benchmarks.lib.endpoint_request_func as requests


def _exact_counts(funcs):
    def counted(send):
        async def request(request_func_input, session, pbar=None, **kwargs):
            output = await send(request_func_input, session, pbar, **kwargs)
            if output.success:
                output.output_tokens = request_func_input.output_len
            return output

        return request

    for name in ("openai", "vllm"):
        funcs[name] = counted(funcs[name])


def _accepted_by_transformers():
    common = requests._update_payload_common

    def update(payload, request_func_input):
        common(payload, request_func_input)
        payload.pop("ignore_eos", None)
        payload.pop("repetition_penalty", None)
        if payload.get("logprobs") is None:
            payload.pop("logprobs", None)

    requests._update_payload_common = update


def main():
    args = sys.argv[1:]
    if args and args[0] == "--transformers":
        args = args[1:]
        _accepted_by_transformers()
    _exact_counts(requests.ASYNC_REQUEST_FUNCS)
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", *args]
    vllm_main()


if __name__ == "__main__":
    main()
