import re, subprocess, sys
# cg-diff.py [--lines] DIR_A DIR_B MODE_A [MODE_B]: self instructions per packet by function, B - A, from
# results/overlay-nat-33b/cg.sh DIR BENCH 200000 MODES outputs (903,168 packets between the two runs).
# --lines: by source line (file and the line's text, inlined lines where they come from) instead.

npk = 903168
lines = '--lines' in sys.argv
if lines: sys.argv.remove('--lines')
def prof_lines(path):
    out = subprocess.run(['callgrind_annotate','--auto=yes','--context=0','--threshold=100',path],capture_output=True,text=True).stdout
    d, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'-- Auto-annotated source: (.*)', line)
        if m: cur = m.group(1).strip().split('/')[-1]; continue
        m = re.match(r'\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*)$', line)
        if m and cur and not m.group(2).startswith('=>') and 'events' not in m.group(2):
            k = cur[:16] + ' ' + m.group(2).strip()[:100]
            d[k] = d.get(k, 0) + int(m.group(1).replace(',', ''))
    return d
def prof(path):
    if lines: return prof_lines(path)
    out = subprocess.run(['callgrind_annotate','--threshold=100','--auto=no',path],capture_output=True,text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[[^\]]*\])?$', line)
        if not m or 'PROGRAM TOTALS' in line: continue
        rest = m.group(2)
        f = re.match(r'^(.*?[^:]):(?!:)(.*)$', rest)
        name = f.group(2) if f else rest
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
