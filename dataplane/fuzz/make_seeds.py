#!/usr/bin/python3
# Seed inputs for dataplane-fuzz (scripts/test writes them before fuzzing):
# bursts in the fuzzer's format, [flags: bit0 port][len][frame] per frame,
# that reach what random bytes rarely do: VXLAN to the fuzz config's VTEP
# (192.0.2.1, VNI 100, on port 1) around TCP, UDP and ICMP errors, replies to
# the source-NAT range, and the outer headers each drop reason names.
import os
import sys

from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw
from scapy.layers.vxlan import VXLAN

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def vx(inner, vni=100, flags=0x08, dport=4789):
    return bytes(Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01") /
                 IP(src="192.0.2.2", dst="192.0.2.1", flags="DF") /
                 UDP(sport=50000, dport=dport, chksum=0) / VXLAN(vni=vni, flags=flags) / inner)


def burst(*frames):
    b = b""
    for port, f in frames:
        f = bytes(f)[:255]
        b += bytes([port, len(f)]) + f
    return b


eth = Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b")
udp_out = eth / IP(src="10.0.0.5", dst="198.51.100.20") / UDP(sport=5000, dport=53) / Raw(b"q" * 8)
seeds = {
    "udp-nat-encap-and-reply": burst(
        (0, udp_out),
        (1, vx(eth / IP(src="198.51.100.20", dst="203.0.113.1") / UDP(sport=53, dport=1024) / Raw(b"a" * 8))),
        (1, vx(eth / IP(src="198.51.100.20", dst="203.0.113.2") / UDP(sport=53, dport=1025) / Raw(b"a" * 8)))),
    "tcp-in-tunnel": burst(
        (0, eth / IP(src="10.0.0.5", dst="198.51.100.20") / TCP(sport=40000, dport=443, flags="S")),
        (1, vx(eth / IP(src="198.51.100.20", dst="10.0.0.5") / TCP(sport=443, dport=40000, flags="SA", ack=1)))),
    "icmp-error-in-tunnel": burst(
        (0, udp_out),
        (1, vx(eth / IP(src="192.0.2.99", dst="203.0.113.1") / ICMP(type=3, code=3) /
               bytes(IP(src="203.0.113.1", dst="198.51.100.20") / UDP(sport=1024, dport=53))[:28]))),
    "bad-outer-headers": burst(
        (1, vx(eth / IP() / UDP(), flags=0)),
        (1, vx(eth / IP() / UDP(), vni=300)),
        (1, vx(eth / IP() / UDP())[:46]),
        (1, vx(eth / IP() / UDP(), dport=4790))),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
