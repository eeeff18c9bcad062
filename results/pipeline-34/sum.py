import re,sys,subprocess
name=sys.argv[1]
def load(P):
    out=subprocess.run(["callgrind_annotate","--inclusive=yes","--auto=no","--threshold=100",f"{name}.{P}.out"],capture_output=True,text=True).stdout
    d={}
    for line in out.splitlines():
        m=re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line) or re.match(r"\s*([\d,]+)\s+(\S.*)$", line)
        if m:
            k=re.sub(r"\s*\[.*\]$","",m.group(2).strip())
            d[k]=d.get(k,0)+int(m.group(1).replace(',',''))
    return d
a=load(2048); b=load(20480)
pk=(20480-2048)*9
for k in sorted(b,key=lambda k:-(b[k]-a.get(k,0)))[:25]:
    v=(b[k]-a.get(k,0))/pk
    if abs(v)>=1: print("%8.1f  %s" % (v, k[:140]))
