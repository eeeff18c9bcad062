import json,sys
d=json.loads(sys.stdin.readline())
key=sys.argv[1] if len(sys.argv)>1 else "mpps"
print(d[key])
