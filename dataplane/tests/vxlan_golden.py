#!/usr/bin/python3
# Golden VXLAN frames from scapy for dataplane/tests/overlay_test.cc.
# argv[1]: a JSON list of frames, each {"outer": {...}, "inner_hex": "..."};
# prints one hex line per frame: Ether / IPv4 / UDP (checksum 0) / VXLAN /
# the inner frame, as RFC 7348 and scapy's VXLAN layer write them.
import json
import sys

from scapy.all import IP, UDP, Ether, Raw
from scapy.layers.vxlan import VXLAN

for f in json.loads(sys.argv[1]):
    o = f["outer"]
    p = (Ether(src=o["smac"], dst=o["dmac"]) /
         IP(src=o["src"], dst=o["dst"], ttl=o.get("ttl", 64), flags="DF" if o.get("df", True) else 0, id=0) /
         UDP(sport=o["sport"], dport=o.get("dport", 4789), chksum=0) /
         VXLAN(vni=o["vni"], flags=o.get("flags", 0x08)) /
         Raw(bytes.fromhex(f["inner_hex"])))
    print(bytes(p).hex())
