#!/usr/bin/python3
# A userspace Geneve VTEP (RFC 8926, UDP 6081) for kernels without a geneve
# device (CONFIG_GENEVE unset): the remote end of a tunnel under test, written
# independently of the project's code on scapy's Geneve layer
# (scapy.contrib.geneve). testbed/geneve_vtep.h starts it inside a namespace.
#
# It owns a TAP device DEV (non-persistent: it goes when this process exits,
# also on SIGKILL, and with its namespace) and a UDP socket on PORT:
#   - every frame the kernel sends out of DEV is put in a Geneve header
#     (VNI, protocol 0x6558 Transparent Ethernet Bridging, the --opt
#     options) by scapy and sent to REMOTE:PORT;
#   - every datagram received on PORT is parsed by scapy; version 0,
#     Ethernet, our VNI, no control (O) bit and no critical (C) option are
#     written to DEV as the inner frame, anything else is counted by reason
#     and dropped.
# Prints "geneve-vtep: ready ..." once DEV and the socket exist, and its
# counters when SIGTERM or SIGINT ends it.
import argparse
import fcntl
import logging
import os
import select
import signal
import socket
import struct
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # not its routing warnings
from scapy.all import Raw  # noqa: E402
from scapy.contrib.geneve import GENEVE, GeneveOptions  # noqa: E402

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
ETH_TEB = 0x6558


class GeneveHeader(GENEVE):
    """scapy's Geneve layer, its payload left as bytes (the inner frame)."""

    name = "GENEVE"

    def guess_payload_class(self, payload):
        return Raw


def option(text):
    """CLASS:TYPE:HEX (class and type in hex, the data a multiple of 4 bytes)."""
    try:
        cls, typ, data = text.split(":")
        raw = bytes.fromhex(data)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--opt {text!r}: want CLASS:TYPE:HEX ({e})")
    if len(raw) % 4 or len(raw) > 124:
        raise argparse.ArgumentTypeError(f"--opt {text!r}: the data must be 0..124 bytes, a multiple of 4")
    return GeneveOptions(classid=int(cls, 16), type=int(typ, 16), data=raw)


def open_tap(dev):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def main():
    ap = argparse.ArgumentParser(description="userspace Geneve VTEP on a TAP device (scapy)")
    ap.add_argument("--dev", required=True, help="the TAP device to create (e.g. gnv100)")
    ap.add_argument("--vni", type=int, required=True)
    ap.add_argument("--remote", required=True, help="the other VTEP's IPv4 address")
    ap.add_argument("--port", type=int, default=6081, help="UDP port, both ends (default 6081)")
    ap.add_argument("--opt", type=option, action="append", default=[],
                    help="an option to send, CLASS:TYPE:HEX (repeatable)")
    a = ap.parse_args()

    counts = {"encap": 0, "decap": 0}

    def drop(why):
        counts[why] = counts.get(why, 0) + 1

    def finish(signum, _frame):
        print("geneve-vtep: " + ", ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    tap = open_tap(a.dev)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", a.port))
    to = (a.remote, a.port)
    print(f"geneve-vtep: ready dev {a.dev} vni {a.vni} remote {a.remote}:{a.port} options {len(a.opt)} "
          f"(scapy {GENEVE.__module__})", flush=True)
    while True:
        ready, _, _ = select.select([tap, sock], [], [])
        if tap in ready:
            frame = os.read(tap, 65535)
            g = GENEVE(vni=a.vni, proto=ETH_TEB, options=a.opt) / Raw(frame)
            try:
                sock.sendto(bytes(g), to)
                counts["encap"] += 1
            except OSError as e:
                drop("send_" + (e.strerror or "error").replace(" ", "_").lower())
        if sock in ready:
            data, _src = sock.recvfrom(65535)
            try:
                g = GeneveHeader(data)
            except Exception:  # scapy refused the bytes
                drop("malformed")
                continue
            inner = bytes(g.payload)
            if len(data) < 8 + 4 * g.optionlen or len(inner) < 14:
                drop("truncated")
            elif g.version != 0:
                drop("version")
            elif g.proto != ETH_TEB:
                drop("not_ethernet")
            elif g.vni != a.vni:
                drop("unknown_vni")
            elif g.oam:
                drop("control")
            elif g.critical or any(o.type & 0x80 for o in g.options):
                drop("critical_option")
            else:
                try:
                    os.write(tap, inner)
                    counts["decap"] += 1
                except OSError as e:  # EIO: the device is down
                    drop("tap_" + (e.strerror or "error").replace(" ", "_").lower())


if __name__ == "__main__":
    main()
