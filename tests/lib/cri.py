#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A tiny CRI client for the tests (no crictl on Debian 12): RunPodSandbox,
StopPodSandbox, RemovePodSandbox over containerd's gRPC socket, with the
protobuf messages encoded by hand (field numbers from the CRI runtime.v1 API).

  cri.py SOCKET runp [--handler=H] [--cgroup-parent=P] NAME UID NAMESPACE [KEY=VALUE...]
                                                        prints the sandbox id
                                                        (H: a runtime handler, RuntimeClass;
                                                        P: the pod's cgroup, as kubelet's
                                                        linux.cgroup_parent)
  cri.py SOCKET stopp ID
  cri.py SOCKET rmp ID
"""
import sys

import grpc

SERVICE = "/runtime.v1.RuntimeService/"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """A length-delimited field (string, bytes, sub-message)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def map_entry(num, key, value):
    return field(num, field(1, key) + field(2, value))


def read_string_field(data, want):
    """First length-delimited field number `want` of a message."""
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, i = read_varint(data, i)
            if num == want:
                return data[i:i + n].decode()
            i += n
        elif wire == 0:
            _, i = read_varint(data, i)
        else:
            raise ValueError("unexpected wire type %d" % wire)
    return ""


def read_varint(data, i):
    shift = n = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def call(channel, method, request):
    rpc = channel.unary_unary(SERVICE + method, request_serializer=None, response_deserializer=None)
    return rpc(request, timeout=120)


def main(argv):
    sock, cmd, args = argv[1], argv[2], argv[3:]
    channel = grpc.insecure_channel("unix://" + sock)
    if cmd == "runp":
        handler = b""
        cgroup_parent = ""
        while args and args[0].startswith("--"):
            opt, _, val = args.pop(0).partition("=")
            if opt == "--handler":
                handler = val
            elif opt == "--cgroup-parent":
                cgroup_parent = val
            else:
                raise SystemExit("cri.py: unknown option " + opt)
        name, uid, namespace = args[:3]
        metadata = field(1, name) + field(2, uid) + field(3, namespace)
        config = field(1, metadata) + field(2, name)
        for kv in args[3:]:
            k, _, v = kv.partition("=")
            config += map_entry(7, k, v)          # annotations
        # linux: {cgroup_parent} (LinuxPodSandboxConfig field 1)
        config += field(8, field(1, cgroup_parent) if cgroup_parent else b"")
        request = field(1, config) + (field(2, handler) if handler else b"")  # runtime_handler
        reply = call(channel, "RunPodSandbox", request)
        print(read_string_field(reply, 1))
    elif cmd in ("stopp", "rmp"):
        call(channel, "StopPodSandbox" if cmd == "stopp" else "RemovePodSandbox", field(1, args[0]))
    else:
        raise SystemExit("usage: cri.py SOCKET runp [--handler=NAME] [--cgroup-parent=PATH] NAME UID NS [K=V...] | stopp ID | rmp ID")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except grpc.RpcError as e:
        print("cri: %s: %s" % (e.code().name, e.details()), file=sys.stderr)
        sys.exit(1)
