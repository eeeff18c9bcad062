#!/usr/bin/python3
# Golden Geneve frames from scapy (scapy.contrib.geneve) for
# dataplane/tests/overlay_test.cc. argv[1]: a JSON list of frames, each
# {"outer": {...}, "inner_hex": "..."}; prints one hex line per frame:
# Ether / IPv4 / UDP (checksum 0) / GENEVE (with its options) / the inner
# frame, as RFC 8926 and scapy's Geneve layer write them.
import json
import sys

from scapy.all import IP, UDP, Ether, Raw
from scapy.contrib.geneve import GENEVE, GeneveOptions

for f in json.loads(sys.argv[1]):
    o = f["outer"]
    opts = [GeneveOptions(classid=x["class"], type=x["type"], data=bytes.fromhex(x["data"]))
            for x in o.get("options", [])]
    g = GENEVE(version=o.get("version", 0), oam=o.get("oam", 0), critical=o.get("critical", 0),
               proto=o.get("proto", 0x6558), vni=o["vni"], options=opts)
    p = (Ether(src=o["smac"], dst=o["dmac"]) /
         IP(src=o["src"], dst=o["dst"], ttl=o.get("ttl", 64), flags="DF" if o.get("df", True) else 0, id=0) /
         UDP(sport=o["sport"], dport=o.get("dport", 6081), chksum=0) / g /
         Raw(bytes.fromhex(f["inner_hex"])))
    print(bytes(p).hex())
