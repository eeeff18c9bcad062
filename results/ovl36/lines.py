# lines: per-packet instructions by source line, cg.sh outputs (DIR MODE files...)
import re,sys,subprocess
d0=sys.argv[1]; mode=sys.argv[2]; filt=sys.argv[3:]
npk=903168
def load(P):
    out=subprocess.run(["callgrind_annotate","--auto=yes","--threshold=100","--context=0",f"{d0}/cg-{mode}-{P}.out"],capture_output=True,text=True).stdout
    d={}; cur=None; ln=0
    for line in out.splitlines():
        m=re.match(r"-- Auto-annotated source: (.*)",line)
        if m: cur=m.group(1); continue
        m=re.match(r"-- line (\d+) ",line)
        if m: ln=int(m.group(1)); continue
        if cur is None or not any(f in cur for f in filt): continue
        m=re.match(r"\s*([\d,]+|\.)\s+(\(\s*[\d.]+%\)\s+)?(.*)$",line)
        if m:
            if m.group(1)!='.': d[(cur.split('/src/')[-1],ln)]=(int(m.group(1).replace(',','')),m.group(3))
            ln+=1
    return d
a=load(100000); b=load(200000)
rows=[(k,(b.get(k,(0,''))[0]-a.get(k,(0,''))[0])/npk,(b.get(k) or a.get(k))[1]) for k in set(a)|set(b)]
tot={}
for k,v,t in rows: tot[k[0]]=tot.get(k[0],0)+v
for f,v in sorted(tot.items(),key=lambda x:-x[1]): print(f"{v:8.1f} {f}")
for k,v,t in sorted(rows,key=lambda r:(r[0][0],r[0][1])):
    if abs(v)>=0.9: print(f"{v:8.1f} {k[0]}:{k[1]} {t.strip()[:90]}")
