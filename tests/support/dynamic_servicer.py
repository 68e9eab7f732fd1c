"""Pulumi's own dynamic provider server (pulumi 3.272.0 sdk/python/lib/pulumi/dynamic/__main__.py,
the process the engine starts for `pulumi-python:dynamic:Resource`) asked one Diff, as the engine
asks it: old outputs and new inputs serialized to protobuf, the provider unpickled from their
`__provider`. Run as a program in its own process (`python -m tests.support.dynamic_servicer`,
JSON {"olds": ..., "news": ...} on stdin; prints {"changes": ..., "replaces": [...]}), because the
server configures Pulumi's process-wide settings and its module starts serving when imported whole:
it is loaded without its last line, `main()`."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys

import pulumi.dynamic
from pulumi.runtime import proto, rpc

_CHANGES = {
    proto.DiffResponse.DIFF_UNKNOWN: "unknown",
    proto.DiffResponse.DIFF_NONE: "none",
    proto.DiffResponse.DIFF_SOME: "some",
}


class _Context:
    """The gRPC context the server aborts through on a provider error."""

    def abort(self, code, details):
        raise RuntimeError(details)


def _servicer():
    source = pathlib.Path(pulumi.dynamic.__file__).with_name("__main__.py").read_text().rstrip()
    if not source.endswith("\nmain()"):
        raise RuntimeError("pulumi/dynamic/__main__.py no longer ends by calling main()")
    namespace = {"__name__": "pulumi_dynamic_server"}
    exec(compile(source[: -len("main()")], "pulumi/dynamic/__main__.py", "exec"), namespace)
    return namespace["DynamicResourceProviderServicer"]()


def _struct(props: dict):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def diff(olds: dict, news: dict) -> dict:
    request = proto.DiffRequest(
        id="run", urn="urn:pulumi:dev::slinky-eks::run::run", olds=_struct(olds), news=_struct(news)
    )
    answer = _servicer().Diff(request, _Context())
    return {"changes": _CHANGES[answer.changes], "replaces": list(answer.replaces)}


if __name__ == "__main__":
    asked = json.load(sys.stdin)
    print(json.dumps(diff(asked["olds"], asked["news"])))
