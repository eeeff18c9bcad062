# lines.py NAME [file-substring...]: per-packet instructions by source line
# (the 20480 run less the 2048 one, over the 165,888 packets between them).
import re,sys,subprocess
name=sys.argv[1]; filt=sys.argv[2:] or ["tracker_impl.h","tcp.h","tracker.cc","flow_cache/stage.h","table.h","key.h"]
def load(P):
    out=subprocess.run(["callgrind_annotate","--auto=yes","--threshold=100","--context=0",f"{name}.{P}.out"],capture_output=True,text=True).stdout
    d={}; cur=None; ln=0
    for line in out.splitlines():
        m=re.match(r"-- Auto-annotated source: (.*)",line)
        if m: cur=m.group(1); continue
        m=re.match(r"-- line (\d+) ",line)
        if m: ln=int(m.group(1)); continue
        if cur is None or not any(f in cur for f in filt): continue
        m=re.match(r"\s*([\d,]+|\.)\s+(\(\s*[\d.]+%\)\s+)?(.*)$",line)
        if m:
            if m.group(1)!='.': d[(cur.split('/')[-1],ln,m.group(3)[:90])]=int(m.group(1).replace(',',''))
            ln+=1
    return d
a=load(2048); b=load(20480); pk=(20480-2048)*9
tot={}
for k in b:
    v=(b[k]-a.get(k,0))/pk
    tot[k[0]]=tot.get(k[0],0)+v
    if abs(v)>=1.5: print("%6.1f %s:%d %s"%(v,k[0],k[1],k[2]))
print(tot)
