#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A CSI node plugin for the tests (tests/system/093-volumes-csi.bats).

It serves CSI v1's Identity, Node and Controller services on a unix socket with
python3-grpcio, decoding and encoding the few protobuf messages it needs by
hand (field numbers from the CSI specification), and mounts with bind
mounts: NodeStageVolume binds volume_context["source"] at the staging
path, NodePublishVolume binds the staging path at the target (read-only
when asked), the Unpublish and Unstage calls unmount. Every call is logged
as one JSON line (method and arguments) to the log file, so a test can
check the order and the arguments of what the agent asked.

CreateVolume makes the folder parameters["base"]/<name> and answers it
as volume_context["source"]; DeleteVolume removes it.

A volume_context of {"fail": "NodeStageVolume"} makes that call fail with
INTERNAL; {"unavailable_once": "NodePublishVolume"} makes its first call
fail with UNAVAILABLE (the agent must retry).

usage: plugin.py SOCKET LOG
"""
import json
import os
import subprocess
import sys
from concurrent import futures

import grpc


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf):
    """field number -> list of values (int for varints, bytes otherwise)"""
    out = {}
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v = bytes(buf[i:i + n])
            i += n
        elif wire == 5:
            v = bytes(buf[i:i + 4])
            i += 4
        elif wire == 1:
            v = bytes(buf[i:i + 8])
            i += 8
        else:
            raise ValueError("wire type %d" % wire)
        out.setdefault(num, []).append(v)
    return out


def text(f, num):
    return f.get(num, [b""])[0].decode()


def string_map(f, num):
    m = {}
    for entry in f.get(num, []):
        e = fields(entry)
        m[text(e, 1)] = text(e, 2)
    return m


def capability(f, num):
    if num not in f:
        return None
    c = fields(f[num][0])
    cap = {}
    if 2 in c:
        mnt = fields(c[2][0])
        cap["fs_type"] = text(mnt, 1)
        cap["mount_flags"] = [v.decode() for v in mnt.get(2, [])]
    if 3 in c:
        cap["mode"] = fields(c[3][0]).get(1, [0])[0]
    return cap


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_bytes(num, data):
    return enc_varint(num << 3 | 2) + enc_varint(len(data)) + data


class Plugin:
    def __init__(self, log):
        self.log = log
        self.failed_once = set()
        self.volumes = {}

    def record(self, method, **args):
        with open(self.log, "a") as f:
            f.write(json.dumps(dict(method=method, **args)) + "\n")

    def inject(self, method, context, ctx):
        if context.get("fail") == method:
            ctx.abort(grpc.StatusCode.INTERNAL, "injected failure of " + method)
        if (context.get("unavailable_once") == method
                and method not in self.failed_once):
            self.failed_once.add(method)
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "try again")

    def GetPluginInfo(self, req, ctx):
        self.record("GetPluginInfo")
        return enc_bytes(1, b"test.csi.shoal.dev") + enc_bytes(2, b"1.0.0")

    def Probe(self, req, ctx):
        return b""

    def GetPluginCapabilities(self, req, ctx):
        return b""

    def CreateVolume(self, req, ctx):
        f = fields(req)
        name = text(f, 1)
        params = string_map(f, 4)
        capacity = 0
        if 2 in f:
            capacity = fields(f[2][0]).get(1, [0])[0]
        caps = [capability({3: [c]}, 3) for c in f.get(3, [])]
        self.record("CreateVolume", name=name, capacity=capacity,
                    parameters=params, capabilities=caps)
        if "base" not in params:
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "no base parameter")
        path = os.path.join(params["base"], name)
        os.makedirs(path, exist_ok=True)
        self.volumes[name] = path
        context = enc_bytes(1, b"source") + enc_bytes(2, path.encode())
        volume = (enc_varint(1 << 3) + enc_varint(capacity) +
                  enc_bytes(2, name.encode()) + enc_bytes(3, context))
        return enc_bytes(1, volume)

    def DeleteVolume(self, req, ctx):
        f = fields(req)
        vid = text(f, 1)
        self.record("DeleteVolume", volume_id=vid)
        path = self.volumes.pop(vid, None)
        if path:
            subprocess.run(["rm", "-rf", "--", path], check=True)
        return b""

    def NodeGetInfo(self, req, ctx):
        return enc_bytes(1, os.uname().nodename.encode())

    def NodeGetCapabilities(self, req, ctx):
        self.record("NodeGetCapabilities")
        rpc = enc_varint(1 << 3 | 0) + enc_varint(1)  # STAGE_UNSTAGE_VOLUME
        return enc_bytes(1, enc_bytes(1, rpc))

    def NodeStageVolume(self, req, ctx):
        f = fields(req)
        context = string_map(f, 6)
        staging = text(f, 3)
        self.record("NodeStageVolume", volume_id=text(f, 1), staging=staging,
                    capability=capability(f, 4), context=context)
        self.inject("NodeStageVolume", context, ctx)
        if not os.path.isdir(staging):
            ctx.abort(grpc.StatusCode.FAILED_PRECONDITION,
                      "staging path %s is not a folder" % staging)
        subprocess.run(["mount", "--bind", context["source"], staging],
                       check=True)
        return b""

    def NodeUnstageVolume(self, req, ctx):
        f = fields(req)
        self.record("NodeUnstageVolume", volume_id=text(f, 1),
                    staging=text(f, 2))
        subprocess.run(["umount", text(f, 2)], check=False)
        return b""

    def NodePublishVolume(self, req, ctx):
        f = fields(req)
        context = string_map(f, 8)
        target = text(f, 4)
        readonly = bool(f.get(6, [0])[0])
        self.record("NodePublishVolume", volume_id=text(f, 1),
                    staging=text(f, 3), target=target, readonly=readonly,
                    capability=capability(f, 5), context=context)
        self.inject("NodePublishVolume", context, ctx)
        os.makedirs(target, exist_ok=True)
        subprocess.run(["mount", "--bind", text(f, 3), target], check=True)
        if readonly:
            subprocess.run(["mount", "-o", "remount,bind,ro", target],
                           check=True)
        return b""

    def NodeUnpublishVolume(self, req, ctx):
        f = fields(req)
        self.record("NodeUnpublishVolume", volume_id=text(f, 1),
                    target=text(f, 2))
        subprocess.run(["umount", text(f, 2)], check=False)
        return b""


def main():
    sock, log = sys.argv[1], sys.argv[2]
    plugin = Plugin(log)
    handlers = {}
    for service, methods in (
            ("csi.v1.Identity", ["GetPluginInfo", "Probe",
                                 "GetPluginCapabilities"]),
            ("csi.v1.Node", ["NodeGetInfo", "NodeGetCapabilities",
                             "NodeStageVolume", "NodeUnstageVolume",
                             "NodePublishVolume", "NodeUnpublishVolume"]),
            ("csi.v1.Controller", ["CreateVolume", "DeleteVolume"])):
        handlers[service] = grpc.method_handlers_generic_handler(
            service, {m: grpc.unary_unary_rpc_method_handler(
                getattr(plugin, m)) for m in methods})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    server.add_generic_rpc_handlers(list(handlers.values()))
    server.add_insecure_port("unix:" + sock)
    server.start()
    print("listening on", sock, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
