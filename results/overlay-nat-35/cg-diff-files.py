import re, subprocess, sys
# cg-diff-files.py: cg-diff.py by file:function (where a function's inlined lines come from).
# tab.py DIR_A DIR_B MODE: self instructions per packet by function (B - A)
npk = 903168
def prof(path):
    out = subprocess.run(['callgrind_annotate','--threshold=100','--auto=no',path],capture_output=True,text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[[^\]]*\])?$', line)
        if not m or 'PROGRAM TOTALS' in line: continue
        rest = m.group(2)
        f = re.match(r'^(.*?[^:]):(?!:)(.*)$', rest)
        name = (f.group(1).split('/')[-1] + ':' + f.group(2)) if f else rest
        name = re.sub(r'\(.*$', '', name.replace('(anonymous namespace)', 'anon')).strip()
        d[name] = d.get(name, 0) + int(m.group(1).replace(',', ''))
    return d
def per(o, mode):
    a, b = prof(f'{o}/cg-{mode}-100000.out'), prof(f'{o}/cg-{mode}-200000.out')
    return {k: (b.get(k, 0) - a.get(k, 0)) / npk for k in set(a) | set(b)}
A = per(sys.argv[1], sys.argv[3]); B = per(sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else sys.argv[3])
print(f"{'TOTAL':60s} {sum(A.values()):8.1f} {sum(B.values()):8.1f} {sum(B.values())-sum(A.values()):+8.1f}")
for k in sorted(set(A)|set(B), key=lambda k: -max(abs(A.get(k,0)),abs(B.get(k,0)))):
    x, y = A.get(k,0), B.get(k,0)
    if max(abs(x),abs(y)) < 1.5: continue
    print(f"{k[:60]:60s} {x:8.1f} {y:8.1f} {y-x:+8.1f}")
