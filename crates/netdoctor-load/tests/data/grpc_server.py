"""A small gRPC server for netdoctor's load tests (Debian's python3-grpcio, run with
/usr/bin/python3). Binds 127.0.0.1 on a free port and prints `ready PORT` once serving.

Methods (generic handlers, raw bytes, no generated code):
  /grpc.health.v1.Health/Check  -> HealthCheckResponse{status: SERVING} (bytes 08 01)
  /test.Echo/Echo               -> the request message, unchanged
  /test.Echo/Fail               -> status UNAVAILABLE ("test failure")
Anything else is UNIMPLEMENTED (grpcio's own answer). The server exits when stdin closes.
"""
import sys
from concurrent import futures

import grpc


def health(request, context):
    return b"\x08\x01"


def echo(request, context):
    return request


def fail(request, context):
    context.abort(grpc.StatusCode.UNAVAILABLE, "test failure")


def raw(fn):
    return grpc.unary_unary_rpc_method_handler(
        fn, request_deserializer=None, response_serializer=None
    )


class Handler(grpc.GenericRpcHandler):
    METHODS = {
        "/grpc.health.v1.Health/Check": raw(health),
        "/test.Echo/Echo": raw(echo),
        "/test.Echo/Fail": raw(fail),
    }

    def service(self, details):
        return self.METHODS.get(details.method)


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"ready {port}", flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
