#!/usr/bin/python3
# Frames from scapy for common/tests/net_test.cc: argv[1] is a JSON list of
# specs; prints one hex line per spec. Ether / IPv4 or IPv6 / TCP, UDP or
# ICMP (echo) / payload, optionally inside Ether / IPv4 / UDP (checksum 0) /
# VXLAN or Geneve (with options); checksums left for scapy to compute unless
# given.
import json
import sys

from scapy.all import ICMP, IP, TCP, UDP, Ether, IPv6, Raw
from scapy.contrib.geneve import GENEVE, GeneveOptions
from scapy.layers.inet6 import ICMPv6EchoRequest
from scapy.layers.vxlan import VXLAN


def frame(s):
    eth = Ether(src=s["smac"], dst=s["dmac"])
    if s["family"] == 4:
        l3 = IP(src=s["src"], dst=s["dst"], ttl=s["ttl"], id=s.get("id", 0), flags="DF" if s.get("df") else 0)
    else:
        l3 = IPv6(src=s["src"], dst=s["dst"], hlim=s["ttl"])
    p = s["proto"]
    if p == "tcp":
        l4 = TCP(sport=s["sport"], dport=s["dport"], seq=s["seq"], ack=s["ack"], flags=s["flags"], window=s["win"])
    elif p == "udp":
        l4 = UDP(sport=s["sport"], dport=s["dport"])
    elif s["family"] == 4:
        l4 = ICMP(type=8, id=s["sport"], seq=s["dport"])
    else:
        l4 = ICMPv6EchoRequest(id=s["sport"], seq=s["dport"])
    return eth / l3 / l4 / Raw(bytes.fromhex(s["payload"]))


for s in json.loads(sys.argv[1]):
    f = frame(s)
    if "vxlan" in s:
        o = s["vxlan"]
        f = (Ether(src=o["smac"], dst=o["dmac"]) /
             IP(src=o["src"], dst=o["dst"], ttl=o["ttl"], id=0, flags="DF" if o["df"] else 0) /
             UDP(sport=o["sport"], dport=o["dport"], chksum=0) / VXLAN(vni=o["vni"], flags=0x08) / f)
    if "geneve" in s:
        o = s["geneve"]
        opts = [GeneveOptions(classid=x["class"], type=x["type"], data=bytes.fromhex(x["data"])) for x in o["options"]]
        # Opt Len given, not left to scapy: 2.5.0's post_build masks it with
        # 0x2f, which loses bit 4 (16..31 and 48..63 words); the options'
        # own Length fields are scapy's.
        optlen = sum(4 + len(bytes.fromhex(x["data"])) for x in o["options"]) // 4
        f = (Ether(src=o["smac"], dst=o["dmac"]) /
             IP(src=o["src"], dst=o["dst"], ttl=o["ttl"], id=0, flags="DF" if o["df"] else 0) /
             UDP(sport=o["sport"], dport=o["dport"], chksum=0) /
             GENEVE(vni=o["vni"], proto=0x6558, optionlen=optlen, oam=int(o["oam"]), critical=int(o["critical"]),
                    options=opts) / f)
    print(bytes(f).hex())
